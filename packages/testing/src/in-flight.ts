import type { Sql } from 'postgres'
import type { RunBody, TestClient } from './client.ts'

export interface ForeachBurst {
  /** The quota: runsInFlight of the member who runs the loop. */
  quota: number
  items: number
  concurrency: number
  /** Each item's run calls `${callUrl}/<index>` once (an http_request: RUNNING while it waits). */
  callUrl: string
}

/**
 * A new member with `runsInFlight` set runs a foreach of `items` children at `concurrency`: the
 * burst of child jobs that used to pass the quota (README, Quotas). Resolves once the loop ended,
 * with the children's workflow.
 */
export async function runForeachBurst (client: TestClient, adminToken: string, burst: ForeachBurst): Promise<{ run: RunBody, itemWorkflowId: string }> {
  const member = await client.newUser(adminToken)
  const patched = await client.call('PATCH', `/api/users/${member.id}`, { token: adminToken, body: { quotas: { runsInFlight: burst.quota } } })
  if (patched.status !== 200) throw new Error(`quota: ${patched.status} ${JSON.stringify(patched.body)}`)
  const itemWorkflowId = await client.createWorkflow(member.token, {
    name: 'item',
    nodes: [{ id: 'call', type: 'http_request', config: { url: `${burst.callUrl}/{{triggerData.index}}` } }]
  })
  const loop = await client.createWorkflow(member.token, {
    name: 'loop',
    nodes: [{ id: 'each', type: 'foreach', config: { workflowId: itemWorkflowId, items: '{{triggerData.items}}', concurrency: burst.concurrency, collectOutputs: false } }]
  })
  const parent = await client.fire(member.token, loop, { items: Array.from({ length: burst.items }, (_, n) => n) })
  const run = await client.runReaching(member.token, parent, ['SUCCESS', 'FAILED'], { timeoutMs: 100_000, intervalMs: 250 })
  return { run, itemWorkflowId }
}

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
