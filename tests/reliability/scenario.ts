import { setTimeout as sleep } from 'node:timers/promises'
import postgres from 'postgres'
import type { Test } from 'tap'
import { startDeliverySink, type Delivery, type DeliverySink } from '@switchboard/testing/delivery-sink'
import { answerLabel, createLoad, numbering, requestIdOf, type Answer } from '@switchboard/testing/load'
import { requestsInDoubt } from '@switchboard/testing/in-doubt'
import { startStack, type Stack } from '@switchboard/testing/processes'
import { startPostgresServer, startRedisServer, type PostgresServer, type StoreServer } from '@switchboard/testing/servers'

/**
 * What every fault scenario shares: a PostgreSQL and a Redis of its own (so that stopping them
 * disturbs no other test), the api and worker processes, a delivery sink, and the audit that
 * holds the answers the senders got against the runs that exist and the deliveries they made.
 */

/**
 * Every answer, during an outage too, within a few seconds (README, Guarantees): the 3 s request
 * deadline (REQUEST_DEADLINE_MS) with room for a loaded two-core machine.
 */
const ANSWER_DEADLINE_MS = 8_000
/** Senders give up after this long: a run created for a request given up is a run nobody accepted. */
export const SENDER_GIVE_UP_MS = 10_000
/** After Redis comes back empty, lost work is re-enqueued within this long (issue 12). */
export const REQUEUE_DEADLINE_MS = 10_000

export interface ReliabilityStack {
  stack: Stack
  postgres: PostgresServer
  redis: StoreServer & { url: string }
  sink: DeliverySink
  /** Straight to the stack's database, for the audit (the api is not asked: it may be down). */
  sql: postgres.Sql
  token: string
  /** Request numbers for every load on this stack: scenarios sharing the sink never share a number. */
  numbering: () => number
}

interface StackOptions {
  apis?: number
  workers?: number
  env?: Record<string, string>
  /** How long the sink holds the answer to a delivery to `path`. */
  sinkDelayMs?: (path: string) => number
}

export async function startReliabilityStack (t: Test, options: StackOptions = {}): Promise<ReliabilityStack> {
  const [pg, redis, sink] = await Promise.all([startPostgresServer(t), startRedisServer(t), startDeliverySink(t, { delayMs: options.sinkDelayMs })])
  const database = await pg.createDatabase()
  const stack = await startStack(t, {
    apis: options.apis,
    workers: options.workers,
    database,
    redisUrl: redis.url,
    env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'warn', ...options.env }
  })
  const sql = postgres(database.url, { max: 2, onnotice: () => {} })
  t.teardown(async () => { await sql.end({ timeout: 1 }) })
  // Each api's first database round trip opens its pool: not part of any scenario's answer times.
  await Promise.all(stack.apis.map(async (api) => { await fetch(`${api.baseUrl}/health/ready`) }))
  return { stack, postgres: pg, redis, sink, sql, token: await stack.adminToken(), numbering: numbering() }
}

/** Creates a workflow and returns its id; throws with the api's answer when refused. */
export async function createWorkflow (rs: ReliabilityStack, input: Record<string, unknown>): Promise<string> {
  return await rs.stack.client.createWorkflow(rs.token, input)
}

/**
 * An http_request node `id` that POSTs to the sink at `/<route>/<id>/<request number>`: the
 * number comes from the run's trigger data (`seqPath`), so the audit can tell the run even
 * when no Idempotency-Key is sent.
 */
export function deliveryNode (rs: ReliabilityStack, id: string, route: string, seqPath: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const seq = `{{${seqPath}}}`
  return { id, type: 'http_request', config: { method: 'POST', url: `${rs.sink.url}/${route}/${id}/${seq}`, body: { seq }, timeoutMs: 30000 }, ...extra }
}

/** The request number and node of a delivery made by a `deliveryNode`. */
function deliveryOf (path: string): { seq: number, nodeId: string } | undefined {
  const [, , nodeId, seq] = path.split('/')
  return nodeId === undefined || seq === undefined || !/^[0-9]+$/.test(seq) ? undefined : { seq: Number(seq), nodeId }
}

/** The inbound webhook accepted a run: 200 `received`. */
export const webhookAccepted = (answer: Answer): boolean => answer.status === 200 && answer.body?.status === 'received'

/** A webhook or a `/fire` accepted a run (200 `received`, 202). */
export const runAccepted = (answer: Answer): boolean => webhookAccepted(answer) || answer.status === 202

/** The request number of a run started by a webhook (in its body) or a `/fire` (its body is the trigger data). */
export const SEQ_OF_WEBHOOK_OR_FIRE = "coalesce(trigger_data->'body'->>'seq', trigger_data->>'seq')"

/**
 * Webhooks to `webhookWorkflowIds` (in turn) and `/fire` of `fireWorkflowId`, numbered together
 * and spread over the apis at `baseUrls` (default: the first api): the two ways a caller starts
 * a run, both held to the same promises.
 */
export function webhookAndFireTraffic (rs: ReliabilityStack, webhookWorkflowIds: string[], fireWorkflowId: string, baseUrls = [rs.stack.baseUrl]): { answers: () => Answer[], start: (webhooksPerSecond: number, firesPerSecond: number) => { stop: () => Promise<void> } } {
  const seqs = rs.numbering
  const apiFor = (seq: number): string => baseUrls[Math.floor(seq / webhookWorkflowIds.length) % baseUrls.length]!
  const webhooks = createLoad({
    url: (seq) => `${apiFor(seq)}/api/automation/webhook/${webhookWorkflowIds[seq % webhookWorkflowIds.length]}`,
    body: (seq) => ({ seq }),
    giveUpMs: SENDER_GIVE_UP_MS,
    numbering: seqs
  })
  const fires = createLoad({
    url: (seq) => `${apiFor(seq)}/api/automation/workflows/${fireWorkflowId}/fire`,
    body: (seq) => ({ seq }),
    headers: { authorization: `Bearer ${rs.token}` },
    giveUpMs: SENDER_GIVE_UP_MS,
    numbering: seqs
  })
  return {
    answers: () => [...webhooks.answers, ...fires.answers],
    start: (webhooksPerSecond, firesPerSecond) => {
      const paced = [webhooks.paced(webhooksPerSecond), fires.paced(firesPerSecond)]
      return { stop: async () => { await Promise.all(paced.map(async (load) => { await load.stop() })) } }
    }
  }
}

/** The run ids of the accepted answers. */
export const acceptedRunIds = (answers: Answer[], accepted: (answer: Answer) => boolean): string[] =>
  answers.filter(accepted).map((answer) => answer.body.runId as string)

/**
 * Waits until none of the workflows' runs is PENDING, RUNNING or WAITING and every run in
 * `runIds` exists, or `timeoutMs` passes. Returns when that happened (Date.now()), or
 * undefined on time-out: the audit then reports what did not finish.
 */
export async function waitUntilSettled (sql: postgres.Sql, workflowIds: string[], runIds: string[], timeoutMs: number): Promise<number | undefined> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    try {
      const [row] = await sql<Array<{ unfinished: number, found: number }>>`
        select
          (select count(*)::int from runs where workflow_id = any(${workflowIds}) and status in ('PENDING', 'RUNNING', 'WAITING')) as unfinished,
          (select count(*)::int from runs where id = any(${runIds})) as found`
      if (row!.unfinished === 0 && row!.found === runIds.length) return Date.now()
    } catch {
      // The database may be down in the middle of the scenario: try again.
    }
    await sleep(250)
  }
  return undefined
}

interface RunRow {
  id: string
  status: string
  attempt: number
  error: string | null
  seq: number | null
}

interface NodeLog { runId: string, nodeId: string, started: number, completed: number }

export interface AuditInput {
  sql: postgres.Sql
  workflowIds: string[]
  answers: Answer[]
  /** Whether an answer accepted a run (webhook: 200 `received`; fire: 202). */
  accepted: (answer: Answer) => boolean
  /** SQL giving the request number a run carries, from its trigger_data (e.g. `trigger_data->'body'->>'seq'`). */
  seqColumn: string
  deliveries: Delivery[]
  /**
   * The apis' output: requests they answered with an error after their COMMIT was sent are in
   * doubt (README, Guarantees): their runs may exist and are not counted as unanswered.
   */
  apiOutput?: string
}

/** A scenario's numbers, printed as one JSON line for the record. */
export interface Figures {
  scenario: string
  requests: number
  accepted: number
  /** Accepted runs that ended SUCCESS. */
  completed: number
  /** Accepted runs not (yet) SUCCESS. */
  lost: number
  /** Runs with a node delivered more than once. */
  duplicated: number
  extraDeliveries: number
  /** Runs taken over or restarted mid-node. */
  interrupted: number
  /** Runs whose request was not accepted (an error, a time-out, a cut connection), and not in doubt. */
  unanswered: number
  /** Requests answered with an error after their COMMIT was sent (the api logged them). */
  inDoubt: number
  answers: Record<string, number>
  slowestAnswerMs: number
  answersOverDeadline: number
  [extra: string]: unknown
}

export interface Audit {
  figures: Figures
  /** Accepted answers whose run is not SUCCESS: `seq runId status error`. */
  lost: string[]
  /** Runs created for a request that was not accepted. */
  unanswered: string[]
  /** Requests with more than one run, or an accepted answer naming a run other than the one the request made. */
  mismatched: string[]
  /** (run, node) delivered more often than 1 + the times the run was interrupted there. */
  overDelivered: string[]
  /** (run, node) delivered more often than the run's log shows the node started. */
  unlogged: string[]
  /** Deliveries whose Idempotency-Key is not `<runId>:<nodeId>` of the run that made them. */
  wrongKeys: string[]
  /** Answers (or give-ups) later than ANSWER_DEADLINE_MS. */
  late: string[]
}

/** Holds what the senders were answered against the runs in the database and the deliveries the sink counted. */
export async function audit (scenario: string, input: AuditInput): Promise<Audit> {
  const { sql } = input
  const runs = await sql<RunRow[]>`
    select id, status, attempt, error, (${sql.unsafe(input.seqColumn)})::int as seq
    from runs where workflow_id = any(${input.workflowIds})`
  const nodeLogs = await sql<NodeLog[]>`
    select run_id as "runId", node_id as "nodeId",
      count(*) filter (where message like 'Node % started')::int as started,
      count(*) filter (where message like 'Node % completed in %')::int as completed
    from run_logs where node_id is not null and run_id in (select id from runs where workflow_id = any(${input.workflowIds}))
    group by run_id, node_id`

  const runsBySeq = new Map<number, RunRow[]>()
  for (const run of runs) if (run.seq !== null) runsBySeq.set(run.seq, [...(runsBySeq.get(run.seq) ?? []), run])
  const runsById = new Map(runs.map((run) => [run.id, run]))
  const acceptedAnswers = input.answers.filter(input.accepted)
  const acceptedSeqs = new Set(acceptedAnswers.map((answer) => answer.seq))

  const lost: string[] = []
  const mismatched: string[] = []
  for (const answer of acceptedAnswers) {
    const run = runsById.get(answer.body?.runId)
    if (run?.status !== 'SUCCESS') lost.push(`${answer.seq} ${answer.body?.runId} ${run?.status ?? 'missing'} ${run?.error ?? ''}`.trim())
    const made = runsBySeq.get(answer.seq) ?? []
    if (made.length !== 1 || made[0]!.id !== answer.body?.runId) mismatched.push(`request ${answer.seq} answered ${answer.body?.runId}, made ${made.map((r) => r.id).join(', ') || 'none'}`)
  }
  for (const [seq, made] of runsBySeq) {
    if (made.length > 1 && !acceptedSeqs.has(seq)) mismatched.push(`request ${seq} made ${made.length} runs`)
  }
  const answersBySeq = new Map(input.answers.map((answer) => [answer.seq, answer]))
  const inDoubt = requestsInDoubt(input.apiOutput ?? '')
  const unanswered = runs.filter((run) => run.seq !== null && !acceptedSeqs.has(run.seq) && !inDoubt.has(requestIdOf(run.seq))).map((run) => {
    const answer = answersBySeq.get(run.seq!)
    return `${run.id} (request ${run.seq}, ${run.status}, answered ${answer === undefined ? 'never sent' : `${answerLabel(answer)} after ${answer.ms} ms`})`
  })

  // Deliveries per (run, node): by Idempotency-Key when sent, else by the request number in the path.
  const delivered = new Map<string, number>()
  const wrongKeys: string[] = []
  for (const delivery of input.deliveries) {
    const made = deliveryOf(delivery.path)
    const run = made === undefined ? undefined : runsBySeq.get(made.seq)?.[0]
    // Another scenario's delivery (or another workflow's) on the same sink.
    if (made === undefined || run === undefined) continue
    const expectedKey = `${run.id}:${made.nodeId}`
    if (delivery.idempotencyKey !== undefined && delivery.idempotencyKey !== expectedKey) wrongKeys.push(`${delivery.path}: ${delivery.idempotencyKey}, expected ${expectedKey}`)
    const key = delivery.idempotencyKey ?? expectedKey
    delivered.set(key, (delivered.get(key) ?? 0) + 1)
  }
  const logs = new Map(nodeLogs.map((log) => [`${log.runId}:${log.nodeId}`, log]))
  const overDelivered: string[] = []
  const unlogged: string[] = []
  const duplicatedRuns = new Set<string>()
  let extraDeliveries = 0
  for (const [key, count] of delivered) {
    const runId = key.slice(0, key.indexOf(':'))
    const log = logs.get(key)
    const attempt = runsById.get(runId)?.attempt ?? 0
    const interruptions = Math.max(attempt, (log?.started ?? 0) - (log?.completed ?? 0))
    if (count > 1) {
      duplicatedRuns.add(runId)
      extraDeliveries += count - 1
    }
    if (count > 1 + interruptions) overDelivered.push(`${key}: ${count} deliveries, ${interruptions} interruptions`)
    if (count > (log?.started ?? 0)) unlogged.push(`${key}: ${count} deliveries, ${log?.started ?? 0} "started" lines`)
  }

  const late = input.answers.filter((answer) => answer.ms > ANSWER_DEADLINE_MS)
    .map((answer) => `request ${answer.seq}: ${answerLabel(answer)} after ${answer.ms} ms`)
  const answers: Record<string, number> = {}
  for (const answer of input.answers) answers[answerLabel(answer)] = (answers[answerLabel(answer)] ?? 0) + 1

  return {
    figures: {
      scenario,
      requests: input.answers.length,
      accepted: acceptedAnswers.length,
      completed: acceptedAnswers.length - lost.length,
      lost: lost.length,
      duplicated: duplicatedRuns.size,
      extraDeliveries,
      interrupted: runs.filter((run) => run.attempt > 0).length,
      unanswered: unanswered.length,
      inDoubt: inDoubt.size,
      answers,
      slowestAnswerMs: Math.max(0, ...input.answers.map((answer) => answer.ms)),
      answersOverDeadline: late.length
    },
    lost,
    unanswered,
    mismatched,
    overDelivered,
    unlogged,
    wrongKeys,
    late
  }
}

/** How the service answered while a store was down, and how soon it accepted again once it was back. */
export function outageFigures (answers: Answer[], accepted: (answer: Answer) => boolean, downAt: number, upAt: number): Record<string, unknown> {
  const during = answers.filter((answer) => answer.sentAt >= downAt && answer.sentAt < upAt)
  const answersDuringOutage: Record<string, number> = {}
  for (const answer of during) answersDuringOutage[answerLabel(answer)] = (answersDuringOutage[answerLabel(answer)] ?? 0) + 1
  const acceptedAgain = answers.filter((answer) => accepted(answer) && answer.sentAt >= upAt).map((answer) => answer.sentAt + answer.ms)
  return {
    outageMs: upAt - downAt,
    answersDuringOutage,
    slowestDuringOutageMs: Math.max(0, ...during.map((answer) => answer.ms)),
    acceptingAgainAfterMs: acceptedAgain.length === 0 ? null : Math.min(...acceptedAgain) - upAt
  }
}

/** The first few items, enough to diagnose without flooding the output. */
const sample = (items: string[]): string[] => items.slice(0, 10)

/** The assertions every scenario makes, and its figures as one JSON line. */
export function assertAudit (t: Test, result: Audit): void {
  t.comment(`figures ${JSON.stringify(result.figures)}`)
  t.ok(result.figures.accepted > 0, 'some requests were accepted')
  t.same(sample(result.lost), [], `every accepted run ends SUCCESS (${result.lost.length} not)`)
  t.same(sample(result.mismatched), [], 'each accepted request made exactly the run it was answered with')
  t.same(sample(result.overDelivered), [], 'deliveries per run and node: at most 1 + the times the run was interrupted there')
  t.same(sample(result.wrongKeys), [], 'an Idempotency-Key, when sent, is <runId>:<nodeId> of the run')
  t.same(sample(result.unlogged), [], 'every delivery shows as a "started" line in the run\'s log')
  t.same(sample(result.unanswered), [], `no run exists for a request that was not accepted (${result.unanswered.length})`)
  t.same(sample(result.late), [], `every answer within ${ANSWER_DEADLINE_MS} ms (${result.late.length} later)`)
}
