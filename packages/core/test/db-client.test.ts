import { context, trace } from '@opentelemetry/api'
import { eq, sql } from 'drizzle-orm'
import t from 'tap'
import { createTestDatabase } from '@switchboard/testing/database'
import { startOtlpReceiver } from '@switchboard/testing/otlp-receiver'
import { createDatabase } from '../src/db/client.ts'
import { users } from '../src/db/schema/index.ts'
import { loadConfig } from '../src/config.ts'
import { createLogger } from '../src/logger.ts'
import { startSpan, startTracing, stopTracing, tracingOn } from '../src/observability/tracing.ts'

const testDatabase = await createTestDatabase()
t.teardown(testDatabase.drop)
// One connection, so that every statement below meets the same server session.
const database = createDatabase(testDatabase.url, { max: 1 })
t.teardown(database.close)
const { db } = database

const preparedLike = async (marker: string): Promise<number> => {
  const [row] = await db.execute<{ count: number }>(sql`select count(*)::int as count from pg_prepared_statements where statement like ${`%${marker}%`} and statement not like '%pg_prepared_statements%'`)
  return row!.count
}

t.test('a statement drizzle runs again is prepared: one round trip instead of Parse and Describe first', async (t) => {
  await db.execute(sql`select ${1}::int as once_only`)
  t.equal(await preparedLike('once_only'), 0, 'a text seen once is not prepared')

  for (let i = 0; i < 3; i++) {
    const [row] = await db.execute<{ value: number }>(sql`select ${i}::int as "value" -- repeated_text`)
    t.equal(row!.value, i, 'each run gets its own parameters')
  }
  t.equal(await preparedLike('repeated_text'), 1, 'a repeated text is prepared once on the connection')
})

t.test('inside a transaction too', async (t) => {
  await db.transaction(async (tx) => {
    for (let i = 0; i < 3; i++) await tx.execute(sql`select ${i}::int -- in_transaction`)
  })
  t.equal(await preparedLike('in_transaction'), 1)
})

t.test('a table changed under a prepared statement is still read right', async (t) => {
  await db.execute(sql`create table drifting (a int)`)
  await db.execute(sql`insert into drifting values (1)`)
  for (let i = 0; i < 2; i++) await db.execute(sql`select * from drifting where a = ${1}`)
  await db.execute(sql`alter table drifting add column b text default 'x'`)
  const rows = await db.execute(sql`select * from drifting where a = ${1}`)
  t.same([...rows], [{ a: 1, b: 'x' }])
})

t.test('in transaction mode nothing is prepared, no session setting is sent, and LISTENs go to their own URL', async (t) => {
  const listenUrl = new URL(testDatabase.url)
  listenUrl.searchParams.set('application_name', 'switchboard_listener')
  const pooled = createDatabase(testDatabase.url, { max: 1, poolMode: 'transaction', statementTimeoutMs: 1000, listenUrl: listenUrl.toString() })
  t.teardown(pooled.close)
  for (let i = 0; i < 3; i++) await pooled.db.execute(sql`select ${i}::int -- pooled_text`)
  const [prepared] = await pooled.db.execute<{ count: number }>(sql`select count(*)::int as count from pg_prepared_statements`)
  t.equal(prepared!.count, 0, 'no named statement on the server connection')
  const [setting] = await pooled.db.execute<{ timeout: string }>(sql`select current_setting('statement_timeout') as timeout`)
  t.equal(setting!.timeout, '0', 'statement_timeout comes from the role, not the connection')

  const payloads: string[] = []
  await pooled.listener.listen('switchboard_pool_test', (payload) => { payloads.push(payload) })
  const [listening] = await database.db.execute<{ name: string }>(sql`select application_name as name from pg_stat_activity where datname = current_database() and query ilike 'listen %'`)
  await database.db.execute(sql`select pg_notify('switchboard_pool_test', 'hello')`)
  const deadline = Date.now() + 5000
  while (payloads.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
  t.same(payloads, ['hello'])
  t.equal(listening?.name, 'switchboard_listener', 'the listener connected to DATABASE_LISTEN_URL')
})

t.test('while tracing is on, each statement inside a span is a CLIENT span with its text and never its values; a transaction is their parent', async (t) => {
  const receiver = await startOtlpReceiver(t)
  const config = loadConfig({ JWT_SECRET: 'x'.repeat(32), ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '3600000' }).tracing
  await startTracing(config, 'switchboard-test', createLogger('silent', 'test'))
  t.teardown(stopTracing)
  const secret = 'someone-secret@example.com'
  const parent = startSpan('caller', {})
  await context.with(trace.setSpan(context.active(), parent), async () => {
    await db.select().from(users).where(eq(users.email, secret))
    await db.transaction(async (tx) => {
      await tx.execute(sql`select ${secret}::text as echoed`)
      await tx.select({ id: users.id }).from(users).where(eq(users.email, secret))
    })
    await t.rejects(db.execute(sql`select ${secret}::int`), 'a failed statement')
  })
  parent.end()
  // Outside any span (a periodic loop's statements): no span, no trace of its own.
  await db.execute(sql`select 1 as outside_any_span`)
  await db.transaction(async (tx) => { await tx.execute(sql`select 1 as outside_any_span`) })
  await stopTracing()
  const callerId = parent.spanContext().spanId
  const statements = receiver.spans.filter((span) => span.kind === 3)
  t.equal(statements.length, 4, 'one CLIENT span per statement inside a span')
  t.equal(receiver.spans.filter((span) => span.name === 'transaction').length, 1, 'one transaction span')
  const database = new URL(testDatabase.url)
  for (const span of statements) {
    t.match(span.attributes, { 'db.system.name': 'postgresql', 'db.namespace': database.pathname.slice(1), 'server.address': database.hostname, 'server.port': Number(database.port) })
  }
  const [read, echoed, inTransaction, failed] = statements
  t.match(read, { name: 'SELECT users', parentSpanId: callerId, status: { code: 0 }, attributes: { 'db.operation.name': 'SELECT', 'db.collection.name': 'users', 'db.query.text': /^select .* from "users" where "users"."email" = \$1$/ } })
  const transaction = receiver.spans.find((span) => span.name === 'transaction')
  t.match(transaction, { kind: 1, parentSpanId: callerId, attributes: { 'db.system.name': 'postgresql' } }, 'the transaction\'s span, INTERNAL')
  t.match(echoed, { name: 'SELECT', parentSpanId: transaction?.spanId, attributes: { 'db.query.text': 'select $1::text as echoed' } })
  t.match(inTransaction, { name: 'SELECT users', parentSpanId: transaction?.spanId })
  t.match(failed, { parentSpanId: callerId, status: { code: 2, message: 'invalid input syntax for type integer: "[redacted]"' } }, 'a failed statement is an error, without the value it quoted')
  t.notMatch(JSON.stringify(receiver.spans), secret.slice(0, 14), 'no value of a statement in any span')
  t.equal(tracingOn, false)
})
