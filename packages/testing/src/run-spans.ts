import type { Sql } from 'postgres'

/**
 * How many runs of `workflowId` there are, and the most of them that ran at once: each from its
 * start to its end as the database recorded them (`started_at` is when its execution began, a run
 * claimed by its first write included). A run that ends is counted out before one that starts at
 * the same instant.
 */
export async function runsAtOnce (sql: Sql, workflowId: string): Promise<{ runs: number, most: number }> {
  // Epoch milliseconds: the connection may read timestamps as text.
  const spans = await sql<Array<{ startedAt: number, completedAt: number }>>`
    select (extract(epoch from started_at) * 1000)::float8 as "startedAt", (extract(epoch from completed_at) * 1000)::float8 as "completedAt"
    from runs where workflow_id = ${workflowId}`
  const edges = spans.flatMap((span) => [{ at: span.startedAt, by: 1 }, { at: span.completedAt, by: -1 }])
  edges.sort((a, b) => a.at - b.at || a.by - b.by)
  let running = 0
  let most = 0
  for (const edge of edges) most = Math.max(most, running += edge.by)
  return { runs: spans.length, most }
}
