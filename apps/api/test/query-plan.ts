import type { TestApp } from './helper.ts'

/**
 * The query plan of the statement matching `statement` that answering GET `url` runs,
 * with sequential scans and sorts priced out: on a test-sized table a Sort or Seq Scan
 * in it means no index serves the statement's filter and order.
 */
export async function planOf (app: TestApp, token: string, url: string, statement: RegExp): Promise<string> {
  const { sql } = app.app.database
  const seen: Array<{ query: string, parameters: unknown[] }> = []
  sql.options.debug = (_connection, query, parameters) => { seen.push({ query, parameters }) }
  try {
    const res = await app.request({ method: 'GET', url, token })
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
  } finally {
    sql.options.debug = false
  }
  const found = seen.find(({ query }) => statement.test(query))
  if (found === undefined) throw new Error(`${url} ran no statement matching ${statement}`)
  const connection = await sql.reserve()
  try {
    await connection`set enable_seqscan = off`
    await connection`set enable_sort = off`
    const plan = await connection.unsafe(`explain ${found.query}`, found.parameters as never[])
    return plan.map((row) => row['QUERY PLAN']).join('\n')
  } finally {
    await connection`reset enable_seqscan`
    await connection`reset enable_sort`
    connection.release()
  }
}
