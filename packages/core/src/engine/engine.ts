import { SpanStatusCode, type Span } from '@opentelemetry/api'
import DataLoader from 'dataloader'
import { DrizzleQueryError } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import type { LogLevel } from '../db/schema/runs.ts'
import type { WorkflowNode } from '../db/schema/workflows.ts'
import type { Logger } from '../logger.ts'
import { runsFinished } from '../observability/metrics.ts'
import { traceRun, type RunTrace } from '../observability/run-trace.ts'
import { contextOf, endSpan, startSpan, traceparentOf, tracingOn } from '../observability/tracing.ts'
import { isTakeoverJobId, resumeJobId, RUN_JOB, type Queues, type RunJobData } from '../queues/catalog.ts'
import { joinOf, nextNodeId, startNode, type FlowOf, type WorkflowGraph } from '../workflows/graph.ts'
import { createJsonSizer, jsonStringBytes, UnserializableValueError, type JsonSizer } from './json-size.ts'
import type { NodeDefinition } from './nodes/definition.ts'
import { NODE_LINK_FIELDS, nodeDefinition, templatedFields } from './nodes/index.ts'
import { neverAborted, pause, pureAttempt, timedAttempt } from './attempts.ts'
import { retryPolicyOf, retrySchedule, type RetryDecision } from './retry.ts'
import { childRuns } from '../runs/children.ts'
import { wakeWaitingRuns } from '../runs/slots.ts'
import { runWaits } from '../runs/waits.ts'
import { runStore, type ClaimedRun, type ClaimOwner, type FailStep, type InMemoryEnd, type LogLine, type Refusal, type StepOutcome } from '../runs/steps.ts'
import { renderTemplate } from './template.ts'
import { effectiveQuotas, type Quotas } from '../users/quotas.ts'
import { NodeError, RetryableNodeError, type CredentialResolver, type NodeContext, type NodeDependencies, type NodeResult, type NodeSecrets, type RunControl } from './types.ts'

/** How a call to `executeRun` left the run. */
type RunOutcome =
  | 'SUCCESS' | 'FAILED' | 'WAITING'
  /** Cancelled or ended elsewhere while a node ran: no later node ran. */
  | 'STOPPED'
  /** Nothing to do: the run is missing or already finished. */
  | 'SKIPPED'
  /** The caller's signal was aborted (the job's lock was lost or could not be renewed): the run is left for its next owner. */
  | 'ABANDONED'
  /** Another claim owns the run (a takeover while this execution went on): its steps were refused and it stopped. */
  | 'SUPERSEDED'
  /** The workflow's maxConcurrentRuns are taken: the run waits PENDING (or WAITING) for a slot, its job held. */
  | 'HELD'

/** Outcomes after which the run no longer holds a slot (ended, or waiting at a wait node). */
const SLOT_FREED: ReadonlySet<RunOutcome> = new Set(['SUCCESS', 'FAILED', 'WAITING', 'STOPPED'])
/** Outcomes after which a child run wakes its parent (docs/engine.md, "Child runs"): it ended, or was cancelled. */
const CHILD_ENDED: ReadonlySet<RunOutcome> = new Set(['SUCCESS', 'FAILED', 'STOPPED'])

/** A wake that finds its run RUNNING (the execution in progress may suspend again) tries again after this. */
const WAKE_RETRY_MS = 250

/**
 * A held job runs again this long after it was held if nothing woke it before: the wakes on
 * every slot freed and the reconciler's pass make this a last resort, so it is long enough that
 * thousands of held runs do not poll.
 */
const HELD_RECHECK_MS = 5 * 60_000

/** What `executeRun` is told about the execution beside the run's id. */
interface RunContext {
  /** The request that started the run, for its log lines. */
  requestId?: string
  /** The W3C traceparent the job carries: the `run.execute` span is its child (while tracing is on). */
  traceparent?: string
  /** The job that delivers the run; without one every claim of a RUNNING run is a takeover. */
  job?: RunDelivery
  /**
   * Holds the job until `until` (ms since the epoch) when the run must wait for a slot: it runs
   * again then, or when a freed slot wakes it (BullMQ: `moveToDelayed`, then `DelayedError`).
   */
  hold?: (until: number) => Promise<void>
  /** The job is a wake (RunJobData.wake): a run it finds RUNNING is held for WAKE_RETRY_MS, not skipped. */
  wake?: boolean
}

/** The BullMQ job that delivers a run, as far as the claim needs it (a BullMQ `Job` is one). */
export interface RunDelivery {
  queueName: string
  id?: string
  /** Failed attempts so far: this attempt is number `attemptsMade + 1`. */
  attemptsMade: number
  /** Times the job stalled: its worker lost it (died, or could not renew the lock). */
  stalledCounter: number
  /** When the job was added: a job added again under the same id (Redis lost its data) is another owner. */
  timestamp: number
  /** The error of the job's previous failed attempt. */
  failedReason?: string
}

interface EngineOptions {
  db: Db
  /** Where resume jobs go. */
  queues: Queues
  logger: Logger
  nodes: NodeDependencies
  /**
   * Dispatches events of the outbox the engine's statements wrote (`workflow.run.failed`),
   * right after their commit (triggers' dispatchEvents); the reconciler dispatches those left.
   */
  dispatchEvents: (eventIds: string[]) => Promise<unknown>
  /**
   * Takeovers of a RUNNING run whose worker stopped before the run is failed.
   * Retries of the same job after a database or Redis error are not takeovers:
   * the job's own attempts bound them (JOB_OPTIONS).
   * @defaultValue 3
   */
  maxAttempts?: number
  /**
   * While a node runs longer than this, the run's status and claim are checked
   * this often so that a cancel, or a takeover by another worker, aborts it.
   * @defaultValue 1000
   */
  cancelPollMs?: number
  /**
   * NODE_OUTPUT_MAX_BYTES: the most a node's output, and its config once
   * rendered, may serialize to (bytes of JSON); beyond, the node fails.
   * @defaultValue 1048576
   */
  nodeOutputMaxBytes?: number
  /**
   * RUN_RESULT_MAX_BYTES: the most the run's `result` may serialize to once a
   * node's output is added; beyond, that node fails.
   * @defaultValue 8388608
   */
  runResultMaxBytes?: number
  /**
   * Every owner's quotas unless an admin set others (users/quotas.ts): the engine holds a run to
   * its owner's `waitingRuns`. @defaultValue none checked
   */
  quotas?: Quotas
  /**
   * The credentials nodes refer to (`credential`, `{{credentials.<name>.<field>}}`).
   * @defaultValue none: a node with a `credential` field fails, credential templates render empty
   */
  credentials?: CredentialResolver
  /**
   * A chain of pure nodes is checkpointed (its outputs, position and log
   * lines written) after this many nodes at most.
   * @defaultValue 100
   */
  checkpointMaxNodes?: number
  /**
   * HTTP_REQUEST_TRACEPARENT: while tracing is on, an http_request node sends the W3C traceparent
   * of its span, unless its own headers set one.
   * @defaultValue true
   */
  httpRequestTraceparent?: boolean
  /** SUBWORKFLOW_MAX_DEPTH: levels of child runs below a run started by a trigger. @defaultValue 10 */
  subworkflowMaxDepth?: number
  /** FOREACH_MAX_ITEMS: the items one foreach node runs. @defaultValue 10000 */
  foreachMaxItems?: number
}

const identity = <T>(value: T): T => value

const withoutCredentials: CredentialResolver = {
  forNode: async (_userId, node) => {
    if (node.config?.credential !== undefined) throw new NodeError('Credentials are not available to this engine')
    return { redact: identity }
  }
}

/**
 * The in-memory starts of jobs that begin in one turn of the event loop share their read, and
 * the ends that come in one turn share their statement (one round trip and one commit): at
 * most this many runs a statement.
 */
const MAX_RUNS_PER_STATEMENT = 100
/**
 * In-memory ends of at most this many bytes (result and lines, as JSON) share a statement, so a
 * shared one carries at most 8 MiB, as a group of starts does; a larger one is written alone.
 */
const MAX_SHARED_END_BYTES = 80 * 1024

/** What an end sends at most: its result's size (undefined: not measurable) and its lines. */
const endBytes = (resultBytes: number | undefined, lines: LogLine[]): number =>
  resultBytes === undefined ? Infinity : lines.reduce((bytes, line) => bytes + jsonStringBytes(line.message) + 100, resultBytes)
/** Collects what the jobs of this turn ask for, not only the microtasks of the current job. */
const nextTurn = (dispatch: () => void): void => { setImmediate(dispatch) }

/**
 * A chain of pure nodes is checkpointed once it has worked this long (ms) since the last
 * checkpoint, so a cancel is seen within about that. Its own work: the time it yielded to the
 * other jobs of the process does not count, so a loaded worker does not checkpoint more (and
 * an in-memory run does not hand back and run again) for being loaded.
 */
const CHECKPOINT_MAX_MS = 200
/** A chain of pure nodes lets other work of the process run (lock renewals, other jobs) this often (ms). */
const YIELD_EVERY_MS = 10
/** Whether a node of `type` runs in memory between checkpoints (its definition's `pure` trait). */
const isPure = (type: string): boolean => nodeDefinition(type)?.traits.pure === true

/** Whether a node of `type` may run in a run not yet claimed: pure, or claiming it by its own first checkpoint. */
function runsBeforeItsFirstWrite (type: string): boolean {
  const traits = nodeDefinition(type)?.traits
  return traits !== undefined && (traits.pure || traits.recordsBeforeEffect)
}

/** A node's config with its template fields rendered against `scope` (`templatedFields`). */
function renderConfig (definition: NodeDefinition, rawConfig: Record<string, unknown>, scope: unknown, onMissing: (path: string) => void, limit: { maxBytes: number, sizer: JsonSizer }): Record<string, unknown> {
  const fields = templatedFields(definition, rawConfig)
  if (fields === 'every') return renderTemplate(rawConfig, scope, onMissing, limit) as Record<string, unknown>
  const rendered = { ...rawConfig }
  for (const field of fields) rendered[field] = renderTemplate(rawConfig[field], scope, onMissing, limit)
  return rendered
}

/**
 * What an execution did since its last checkpoint, written by the next one:
 * the outputs of the nodes that finished, their log lines in order.
 */
interface Pending {
  outputs: Record<string, unknown>
  lines: LogLine[]
  /** Nodes finished since the checkpoint. */
  nodes: number
  /** When the checkpoint was written (performance.now()). */
  since: number
  /** Of the time since, how long the execution waited: yielding to other work of the process, or loading credentials. */
  waitedMs: number
  /**
   * A node acted on the outside world since the checkpoint (`beforeEffect` was written): the
   * lines say what it did, so they are written even if the next step is refused (a cancel).
   * Pure nodes' lines go with their outputs: a refused step writes neither, so a cancelled run's
   * log and result end at its last checkpoint (contract, Runs: no later node runs).
   */
  acted: boolean
}

/** The size of a run's result as JSON, kept up to date as nodes add to it. */
interface ResultSize { bytes: number | undefined }

/** The flow trait of a node's type (parallel branches: docs/engine.md, "Branches and joins"). */
const flowOf: FlowOf = (node) => nodeDefinition(node.type)?.traits.flow

/** The join of a fork node, or undefined (a save refuses a fork without one). */
function joinIdOf (graph: WorkflowGraph, fork: WorkflowNode): string | undefined {
  const join = joinOf(graph, fork, NODE_LINK_FIELDS, flowOf)
  return 'joinId' in join ? join.joinId : undefined
}

/** What a fork or a join node is told of the other. */
function flowContext (graph: WorkflowGraph, node: WorkflowNode): NodeContext['flow'] {
  const flow = flowOf(node)
  if (flow === 'fork') {
    const joinId = joinIdOf(graph, node)
    return { join: graph.nodes.find((candidate) => candidate.id === joinId) }
  }
  if (flow === 'join') return { fork: graph.nodes.find((candidate) => flowOf(candidate) === 'fork' && joinIdOf(graph, candidate) === node.id) }
  return undefined
}

/** One execution of a run: what each of its steps reads and writes, passed as one. */
interface Execution {
  run: ClaimedRun
  graph: WorkflowGraph
  trace: RunTrace
  /** What happened since the last checkpoint. */
  pending: Pending
  /** triggerData and every node's output so far. */
  result: Record<string, unknown>
  resultSize: ResultSize
  /** Sizes of the result's objects, measured once. */
  sizer: JsonSizer
  /** The job's signal: aborted when its lock is lost. */
  signal: AbortSignal | undefined
}

/** `value`'s size, or undefined when it cannot be serialized. */
function measurable (sizer: JsonSizer, value: unknown): number | undefined {
  try {
    return sizer.measure(value)
  } catch (err) {
    if (err instanceof UnserializableValueError) return undefined
    throw err
  }
}

/** Empties `pending` once it is written. */
function checkpointed (pending: Pending): void {
  pending.outputs = {}
  pending.lines = []
  pending.nodes = 0
  pending.since = performance.now()
  pending.waitedMs = 0
  pending.acted = false
}

/** A node may show a few missing paths; a config with thousands of them must not write thousands of lines. */
const MAX_MISSING_PATH_LINES = 20
/** Paths are quoted in log lines up to this many characters. */
const MAX_QUOTED_PATH_LENGTH = 200

const errorMessage = (err: unknown): string => err instanceof Error && err.message !== '' ? err.message : String(err)

/**
 * A database or Redis failure while executing a run: `executeRun` throws it,
 * the job fails and BullMQ retries it (JOB_OPTIONS: 5 attempts, backoff 1, 2,
 * 4, 8 s), and the retry claims the run again as the same owner. Its message
 * (the job's failedReason in Redis) names the store and the driver's error,
 * never a statement or its parameters.
 */
class InfrastructureError extends Error {
  override name = 'InfrastructureError'
  constructor (store: 'database' | 'Redis', cause: unknown) {
    super(`${store} error: ${errorMessage(cause instanceof DrizzleQueryError ? cause.cause ?? cause : cause)}`, { cause })
  }
}

/**
 * An execution that was to claim its run with its first write (`ClaimedRun.claimAtEnd`) needs
 * another write first (a failure, a checkpoint, a retry's wait) or found the run claimed or
 * cancelled at that write: nothing was written, and the run is claimed and executed as usual.
 */
class ClaimNeededError extends Error {
  override name = 'ClaimNeededError'
}

/** A node was told not to act: the run is no longer RUNNING under this execution's claim. */
class ClaimLostError extends Error {
  override name = 'ClaimLostError'
  constructor (readonly refusal: Refusal) {
    super(refusal === 'superseded' ? 'the run was claimed by another worker' : 'the run is no longer running')
  }
}

/** Runs `work` against the database: its failures are infrastructure failures. */
async function database<T> (work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (err) {
    throw new InfrastructureError('database', err)
  }
}

/** The job's first try, never stalled: a start's job finds its run PENDING (a retry or a takeover's finds it RUNNING). */
const isFirstDelivery = (job: RunDelivery): boolean => job.attemptsMade === 0 && job.stalledCounter === 0

/**
 * The owner of a claim made by `job`, and the line it writes when it claims the run again after
 * a failed attempt. Only a takeover job (the reconciler's, for a run whose worker stopped) takes
 * over on its first delivery: a start, resume or wake job that finds the run RUNNING finds it
 * driven by another delivery (of a job added before under the same id when Redis lost its data,
 * or of another job of the run: a timer, a wake), which is the reconciler's to take over if it
 * stops. A job delivered again (its worker stalled, or its attempt failed) takes over.
 */
function ownerOf (job: RunDelivery): ClaimOwner {
  const reason = job.failedReason ?? 'an unknown error'
  const cause = /^(database|Redis) error: /.test(reason) ? `a ${reason}` : `its job failed: ${reason}`
  return {
    id: `${job.queueName}/${job.id ?? ''}/${job.timestamp}/${job.stalledCounter}`,
    retryLine: `Run resumed after ${cause} (job attempt ${job.attemptsMade + 1})`,
    takesOver: !isFirstDelivery(job) || isTakeoverJobId(job.id ?? '')
  }
}

/**
 * Executes runs (contract, "Graph execution" and "Runs"). One call takes a run
 * from PENDING, WAITING or (after its worker died) RUNNING and executes nodes
 * until the run ends, suspends on a wait node, or is cancelled. Pure nodes
 * (set, condition, verify_signature) run in memory; node outputs, the run's
 * position and log lines are written in one statement at checkpoints: before
 * and after a node with an outside effect, at a wait, at the end, and every
 * `checkpointMaxNodes` nodes or CHECKPOINT_MAX_MS in a pure chain. A run taken
 * over after a crash goes on from its last checkpoint, re-running pure nodes
 * only.
 */
export function createRunEngine (options: EngineOptions) {
  const { logger, queues } = options
  const store = runStore(options.db)
  const maxAttempts = options.maxAttempts ?? 3
  const cancelPollMs = options.cancelPollMs ?? 1000
  const nodeOutputMaxBytes = options.nodeOutputMaxBytes ?? 1024 * 1024
  const runResultMaxBytes = options.runResultMaxBytes ?? 8 * 1024 * 1024
  const credentials = options.credentials ?? withoutCredentials
  const checkpointMaxNodes = options.checkpointMaxNodes ?? 100
  const httpRequestTraceparent = options.httpRequestTraceparent ?? true
  const control: RunControl = {
    children: childRuns({ db: options.db, queues, logger }),
    waits: runWaits(options.db),
    limits: { subworkflowMaxDepth: options.subworkflowMaxDepth ?? 10, foreachMaxItems: options.foreachMaxItems ?? 10_000 }
  }
  const inMemoryStarts = new DataLoader<string, ClaimedRun | undefined>(async (runIds) => {
    const found = await store.peekStarts(runIds)
    return runIds.map((runId) => found.get(runId))
  }, { cache: false, maxBatchSize: MAX_RUNS_PER_STATEMENT, batchScheduleFn: nextTurn })
  const inMemoryEnds = new DataLoader<InMemoryEnd, boolean>(async (ends) => await store.startAndSucceed(ends), {
    cache: false, maxBatchSize: MAX_RUNS_PER_STATEMENT, batchScheduleFn: nextTurn
  })

  /** Events a step wrote (the outbox), dispatched now; when that fails, the reconciler dispatches them (they are stored with the step). */
  async function dispatchWritten (runId: string, eventIds: string[]): Promise<void> {
    try {
      await options.dispatchEvents(eventIds)
    } catch (err) {
      logger.warn({ err, runId, eventIds }, 'events not dispatched yet: the reconciler will')
    }
  }

  /**
   * Ends a run FAILED (guarded by `step.from`: statuses, or the claim of the execution that fails
   * it), with its `workflow.run.failed` event, then dispatches the event; false when the run was
   * not in `from`. `trace`: the run is being executed (the reconciler fails runs it does not execute).
   */
  async function failRun (runId: string, error: string, { trace, ...step }: FailStep & { trace?: RunTrace } = {}): Promise<boolean> {
    trace?.write(step.lines ?? [])
    const failed = await store.fail(runId, error, step)
    if (failed === undefined) return false
    runsFinished.inc({ status: 'FAILED' })
    ;(trace?.log ?? logger.child({ runId, workflowId: failed.workflowId })).error({ error }, 'Run failed')
    trace?.ended('FAILED')
    if (failed.eventId !== null) await dispatchWritten(runId, [failed.eventId])
    return true
  }

  /** A run may wait (WAITING, a delayed job in Redis) only while its owner has fewer waiting runs than their quota. */
  async function checkWaitingQuota (userId: string): Promise<void> {
    if (options.quotas === undefined) return
    const { waiting, quotas } = await database(store.waitingRuns(userId))
    const max = effectiveQuotas(options.quotas, quotas).waitingRuns
    if (waiting >= max) throw new NodeError(`Too many waiting runs (max ${max}): this run cannot wait`)
  }

  /** How an execution ends when its step was refused; a superseded one says so in the process log. */
  function refused (refusal: Refusal, { trace, run }: Execution): RunOutcome {
    if (refusal === 'stopped') return 'STOPPED'
    trace.log.warn({ claim: run.claim }, 'Run step refused: another worker claimed the run; this execution stopped')
    return 'SUPERSEDED'
  }

  /**
   * A node failed: the run ends FAILED at `nodeId` with what was pending, as a step of this claim;
   * a run executed unclaimed is claimed with what it did first, so that nothing it ran runs again.
   */
  async function failClaimed (execution: Execution, error: string, nodeId: string): Promise<RunOutcome> {
    const { run, pending, trace } = execution
    if (run.claimAtEnd !== undefined) await claimWithCheckpoint(execution, run.claimAtEnd, nodeId)
    const progress = { outputs: pending.outputs, currentNodeId: nodeId }
    if (await database(failRun(run.id, error, { lines: pending.lines, from: { claim: run.claim }, trace, progress, keepLines: pending.acted }))) return 'FAILED'
    return refused(await database(store.lost(run.id, run.claim)) ?? 'stopped', execution)
  }

  /** A step was written, or the execution stops (undefined: go on). */
  function afterStep (outcome: StepOutcome, execution: Execution): RunOutcome | undefined {
    return outcome === 'written' ? undefined : refused(outcome, execution)
  }

  /**
   * Runs `execute` with a signal that aborts when the job's signal does or
   * when the run stops being RUNNING under this claim (a cancel, or another
   * worker's takeover), checked only while the node is still busy after `cancelPollMs`.
   */
  async function watchingClaim<T> (run: ClaimedRun, jobSignal: AbortSignal | undefined, execute: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController()
    const signal = jobSignal === undefined ? controller.signal : AbortSignal.any([jobSignal, controller.signal])
    let timer: NodeJS.Timeout | undefined
    let done = false
    const poll = (): void => {
      timer = setTimeout(() => {
        // Not claimed yet (its node has not reached its outside effect): nothing to lose.
        if (run.claimAtEnd !== undefined) {
          poll()
          return
        }
        store.lost(run.id, run.claim).then((refusal) => {
          if (refusal !== undefined) controller.abort(new ClaimLostError(refusal))
          else if (!done) poll()
        }, () => { if (!done) poll() })
      }, cancelPollMs)
    }
    poll()
    try {
      return await execute(signal)
    } finally {
      done = true
      clearTimeout(timer)
    }
  }

  /**
   * Checks that a node's output can be stored: it serializes, within
   * NODE_OUTPUT_MAX_BYTES, and the run's result with it within
   * RUN_RESULT_MAX_BYTES. Measured without serializing, so an output that
   * would take gigabytes fails at once rather than exhausting the worker.
   * `resultSize.bytes` is the result's size so far: a new key adds to it, so
   * a node costs the size of its output, not of the whole result (undefined:
   * not measurable, the whole result is measured and its error reported).
   */
  function checkStorable (nodeId: string, output: unknown, { result, sizer, resultSize }: Execution): void {
    const check = (what: string, value: unknown, maxBytes: number): number => {
      let bytes: number
      try {
        bytes = sizer.measure(value, maxBytes)
      } catch (err) {
        if (err instanceof UnserializableValueError) throw new NodeError(`${what} cannot be stored: ${err.message}`)
        throw err
      }
      if (bytes > maxBytes) throw new NodeError(`${what} exceeds ${maxBytes} bytes`)
      return bytes
    }
    check('Node output', output, nodeOutputMaxBytes)
    if (resultSize.bytes === undefined || nodeId in result || output === undefined) {
      resultSize.bytes = check('Run result', { ...result, [nodeId]: output }, runResultMaxBytes)
      return
    }
    // The output one level down, as it is in the result (its depth counts); then its entry added to the result's size.
    const entryBytes = (Object.keys(result).length > 0 ? 1 : 0) + jsonStringBytes(nodeId) + 1 + check('Run result', [output], runResultMaxBytes) - 2
    if (resultSize.bytes + entryBytes > runResultMaxBytes) throw new NodeError(`Run result exceeds ${runResultMaxBytes} bytes`)
    resultSize.bytes += entryBytes
  }

  async function executeNode (execution: Execution, node: WorkflowNode, traceparent: string | undefined): Promise<NodeResult> {
    const loading = performance.now()
    const secrets = await credentials.forNode(execution.run.userId, node)
    execution.pending.waitedMs += performance.now() - loading
    try {
      return await executeWithSecrets(execution, node, secrets, traceparent)
    } catch (err) {
      // What a node failed with may quote what it sent (a header, a URL).
      const message = errorMessage(err)
      const redacted = secrets.redact(message)
      throw redacted === message ? err : new NodeError(redacted)
    }
  }

  /**
   * The first write of a run executed unclaimed (`claimAtEnd`): it claims the run with what its
   * pure nodes did and where it goes on (`startAndRecord`), before an outside effect or when a
   * pure chain's checkpoint is due, so that nothing it ran is run again. Throws ClaimNeededError
   * when the run was claimed or ended elsewhere meanwhile: the usual claim then takes it.
   */
  async function claimWithCheckpoint ({ run, pending, trace }: Execution, claimAtEnd: { ownerId: string | undefined }, currentNodeId: string): Promise<void> {
    const lines = pending.lines
    const claim = await database(store.startAndRecord(run.id, run.claim, claimAtEnd.ownerId, run.startedAt, lines, { outputs: pending.outputs, currentNodeId }))
    if (claim === undefined) throw new ClaimNeededError('the run was claimed or ended elsewhere')
    run.claim = claim
    run.claimAtEnd = undefined
    trace.spans?.written()
    trace.write(lines)
    checkpointed(pending)
  }

  async function executeWithSecrets (execution: Execution, node: WorkflowNode, secrets: NodeSecrets, traceparent: string | undefined): Promise<NodeResult> {
    const { run, pending, result, sizer, trace, signal } = execution
    const definition = nodeDefinition(node.type)
    if (definition === undefined) throw new NodeError(`Unknown node type: ${node.type}`)
    const log = (level: LogLevel, message: string): void => { pending.lines.push({ nodeId: node.id, level, message: secrets.redact(message), at: new Date() }) }
    // A checkpoint before the node acts, under this claim: what is pending (earlier pure nodes), the step's lines so far and `message`.
    const beforeEffect = async (message: string): Promise<void> => {
      log('INFO', message)
      const lines = pending.lines
      if (run.claimAtEnd !== undefined) {
        await claimWithCheckpoint(execution, run.claimAtEnd, node.id)
        pending.acted = true
        return
      }
      trace.write(lines)
      const progress = pending.nodes === 0 ? undefined : { outputs: pending.outputs, currentNodeId: node.id }
      const outcome = await database(store.record(run.id, run.claim, lines, progress))
      if (outcome !== 'written') throw new ClaimLostError(outcome)
      checkpointed(pending)
      pending.acted = true
    }
    const rawConfig = node.config ?? {}
    let missing = 0
    const onMissing = (path: string): void => {
      if (++missing > MAX_MISSING_PATH_LINES) return
      const quoted = path.length > MAX_QUOTED_PATH_LENGTH ? `${path.slice(0, MAX_QUOTED_PATH_LENGTH)}…` : path
      log('WARN', `Template path not found: ${quoted}`)
    }
    const scope = secrets.templateScope === undefined ? result : { ...result, credentials: secrets.templateScope }
    const config = renderConfig(definition, rawConfig, scope, onMissing, { maxBytes: nodeOutputMaxBytes, sizer })
    if (missing > MAX_MISSING_PATH_LINES) log('WARN', `Template paths not found: ${missing - MAX_MISSING_PATH_LINES} more`)
    const policy = retryPolicyOf(definition, config)
    const schedule = retrySchedule(policy)
    const pure = definition.traits.pure
    // Why the next attempt is not made although attempts were left, said once per failure.
    const decide = (retryAfterMs?: number): RetryDecision => {
      const decision = schedule.decide(retryAfterMs)
      if (!decision.retry && decision.reason !== undefined) log('WARN', `Not retried: ${decision.reason}`)
      return decision
    }
    const attempt = async (nodeSignal: AbortSignal): Promise<NodeResult> => await definition.execute({
      node,
      config,
      rawConfig,
      run: { id: run.id, workflowId: run.workflowId, userId: run.userId, triggerData: run.triggerData, rawBody: run.rawBody, depth: run.depth },
      credential: secrets.credential,
      result,
      log,
      beforeEffect,
      signal: nodeSignal,
      deps: options.nodes,
      control,
      flow: flowContext(execution.graph, node),
      attempt: schedule.retries + 1,
      mayRetry: (retryAfterMs) => decide(retryAfterMs).retry,
      idempotencyKey: `${run.id}:${encodeURIComponent(node.id)}`,
      traceparent
    })
    /** Attempts until one succeeds, fails for good, or its retries are spent; `nodeSignal` stops the waits between them. */
    const attempts = async (nodeSignal: AbortSignal): Promise<NodeResult> => {
      for (;;) {
        try {
          return pure ? await pureAttempt(policy.timeoutMs, attempt) : await timedAttempt(policy.timeoutMs, nodeSignal, attempt)
        } catch (err) {
          if (!(err instanceof RetryableNodeError)) throw err
          const decision = decide(err.retryAfterMs)
          if (!decision.retry) throw err
          // A retry waits: a run executed unclaimed is claimed first, with what it did, so that nothing runs again.
          if (run.claimAtEnd !== undefined) await claimWithCheckpoint(execution, run.claimAtEnd, node.id)
          log('WARN', `${err.message}; retrying in ${decision.delayMs}ms (${schedule.retries + 1} of ${policy.attempts - 1})`)
          schedule.record(decision.delayMs)
          // A pure node waits on nothing but this: the claim is watched only while it waits.
          await (pure ? watchingClaim(run, signal, async (waitSignal) => { await pause(decision.delayMs, waitSignal) }) : pause(decision.delayMs, nodeSignal))
        }
      }
    }
    // A pure node waits on nothing: no poll of the run's claim, no timer.
    const outcome = pure ? await attempts(neverAborted) : await watchingClaim(run, signal, attempts)
    const output = secrets.redact(outcome.output)
    checkStorable(node.id, output, execution)
    if (outcome.outputs === undefined) return { ...outcome, output }
    const outputs = secrets.redact(outcome.outputs)
    for (const [id, added] of Object.entries(outputs)) checkStorable(id, added, execution)
    return { ...outcome, output, outputs }
  }

  /**
   * Executes the run `runId` as far as it goes now. Throws only on
   * infrastructure failures (database, Redis), as an InfrastructureError: the
   * job is then retried and, as the same owner, claims the run again from the
   * node that was running without counting a takeover. A run of a workflow
   * whose maxConcurrentRuns are taken is not executed: HELD, its job held by
   * `context.hold` until a slot frees (runs/slots.ts).
   */
  async function executeRun (runId: string, signal?: AbortSignal, context: RunContext = {}): Promise<RunOutcome> {
    if (!tracingOn) return await executeOnce(runId, signal, context, undefined)
    const span = startSpan('run.execute', { 'switchboard.run.id': runId }, contextOf(context.traceparent))
    try {
      const outcome = await executeOnce(runId, signal, context, span)
      span.setAttribute('switchboard.run.outcome', outcome)
      // Why is on the failed node's span.
      if (outcome === 'FAILED') span.setStatus({ code: SpanStatusCode.ERROR })
      span.end()
      return outcome
    } catch (err) {
      endSpan(span, err)
      throw err
    }
  }

  /** `executeRun`, its nodes' spans children of `span` while tracing is on. */
  async function executeOnce (runId: string, signal: AbortSignal | undefined, context: RunContext, span: Span | undefined): Promise<RunOutcome> {
    const owner = context.job === undefined ? undefined : ownerOf(context.job)
    if (context.job !== undefined && isFirstDelivery(context.job)) {
      const inMemory = await startInMemory(runId, signal, context.requestId, owner, span)
      if (inMemory !== undefined) return inMemory
    }
    let claim = await database(store.claim(runId, maxAttempts, owner))
    if (claim !== undefined && 'limited' in claim) {
      claim = await database(store.claimSlot(runId, claim.limited.workflowId, maxAttempts, owner))
      if (claim !== undefined && 'held' in claim) return await held(claim.held.workflowId, context.hold)
    }
    if (claim === undefined) return 'SKIPPED'
    if (!('claimed' in claim)) {
      if (!('status' in claim) || claim.status !== 'RUNNING') return 'SKIPPED'
      if (owner?.takesOver === false) return context.wake === true ? await retryWake(context.hold) : 'SKIPPED'
      const failed = await database(failRun(runId, `Run interrupted: its worker stopped ${claim.attempt + 1} times`))
      return failed ? 'FAILED' : 'SKIPPED'
    }
    const run = claim.claimed
    const outcome = await executeClaimed(run, signal, context.requestId, owner, span)
    if (run.maxConcurrentRuns !== null && SLOT_FREED.has(outcome)) await wakeWaiting(run.workflowId)
    return outcome
  }

  /**
   * A PENDING run of a workflow without a maxConcurrentRuns, of at most `checkpointMaxNodes`
   * nodes, all pure or writing their own checkpoint before their outside effect, starts without
   * a claim of its own: its pure nodes run in memory, and its first write claims it, either its
   * end (all pure: one statement for the whole run, shared with the ends of the same turn) or
   * the checkpoint before its first outside effect. Nothing outside the run was touched before
   * that write, so a worker that dies before it leaves the run PENDING for the job's next
   * delivery. Undefined when the run is not such a run, or needs another write first (a failure,
   * a checkpoint, a retry), or was claimed or ended meanwhile: it is then claimed and executed as
   * usual, its pure nodes run again.
   */
  async function startInMemory (runId: string, signal: AbortSignal | undefined, requestId: string | undefined, owner: ClaimOwner | undefined, span: Span | undefined): Promise<RunOutcome | undefined> {
    const run = await database(inMemoryStarts.load(runId))
    if (run === undefined || run.maxConcurrentRuns !== null) return undefined
    const nodes = run.workflow.nodes
    if (nodes.length > checkpointMaxNodes || !nodes.every((node) => runsBeforeItsFirstWrite(node.type))) return undefined
    try {
      return await executeClaimed({ ...run, claimAtEnd: { ownerId: owner?.id } }, signal, requestId, owner, span)
    } catch (err) {
      if (err instanceof ClaimNeededError) return undefined
      throw err
    }
  }

  /**
   * Gives the slots of a workflow with a maxConcurrentRuns that are free to its oldest waiting
   * runs. A failure is logged, not thrown: the reconciler's next pass wakes them.
   */
  async function wakeWaiting (workflowId: string): Promise<void> {
    try {
      await wakeWaitingRuns({ db: options.db, queues }, workflowId)
    } catch (err) {
      logger.warn({ err, workflowId }, 'runs waiting for a slot not woken: the reconciler will')
    }
  }

  /**
   * The run waits for a slot: its job is held (moved to delayed) first, then the slots are
   * checked again, so that one freed while this run was refused (its end's wake found the job
   * still running) goes to the first waiting run, perhaps this one.
   */
  async function held (workflowId: string, hold: RunContext['hold']): Promise<RunOutcome> {
    if (hold !== undefined) {
      try {
        await hold(Date.now() + HELD_RECHECK_MS)
      } catch (err) {
        throw new InfrastructureError('Redis', err)
      }
    }
    await wakeWaiting(workflowId)
    return 'HELD'
  }

  /** A wake found its run RUNNING: it runs again shortly, once that execution suspended or ended. */
  async function retryWake (hold: RunContext['hold']): Promise<RunOutcome> {
    if (hold === undefined) return 'SKIPPED'
    try {
      await hold(Date.now() + WAKE_RETRY_MS)
    } catch (err) {
      throw new InfrastructureError('Redis', err)
    }
    return 'HELD'
  }

  /** Executes a claimed run; a child that ended wakes its parent (docs/engine.md, "Child runs"). */
  async function executeClaimed (run: ClaimedRun, signal: AbortSignal | undefined, requestId: string | undefined, owner: ClaimOwner | undefined, span: Span | undefined): Promise<RunOutcome> {
    const outcome = await executeSteps(run, signal, requestId, owner, span)
    if (run.parent !== null && CHILD_ENDED.has(outcome)) await control.children.wakeParent(run.parent)
    return outcome
  }

  async function executeSteps (run: ClaimedRun, signal: AbortSignal | undefined, requestId: string | undefined, owner: ClaimOwner | undefined, span: Span | undefined): Promise<RunOutcome> {
    const runId = run.id
    const trace = traceRun(logger, run, requestId, span)
    const firstLines = trace.claimed(owner?.retryLine)
    const graph: WorkflowGraph = { nodes: run.workflow.nodes, edges: run.workflow.edges }
    const nodesById = new Map(graph.nodes.map((node) => [node.id, node]))
    const result = { ...run.result }
    // Sizes of the objects of this run's result, measured once; they are never changed once stored.
    const sizer = createJsonSizer()
    const resultSize: ResultSize = { bytes: measurable(sizer, result) }
    const visited = new Set<string>()
    let nodeId = run.currentNodeId ?? startNode(graph, NODE_LINK_FIELDS)?.id
    const pending: Pending = { outputs: {}, lines: firstLines, nodes: 0, since: performance.now(), waitedMs: 0, acted: false }
    const execution: Execution = { run, graph, trace, pending, result, resultSize, sizer, signal }
    // A parallel branch ends where it meets its merge: the parent's run goes on from there.
    const fork = run.parent?.branch === true ? nodesById.get(run.parent.nodeId) : undefined
    const branchJoin = fork !== undefined && flowOf(fork) === 'fork' ? joinIdOf(graph, fork) : undefined

    const executionStarted = performance.now()
    /** The last node finished (or there was none): the run ends SUCCESS with what is pending. */
    const succeed = async ({ outputs, lines, acted }: Pick<Pending, 'outputs' | 'lines' | 'acted'>): Promise<RunOutcome> => {
      if (run.claimAtEnd !== undefined) {
        const elapsedMs = Math.round(performance.now() - executionStarted)
        const end: InMemoryEnd = { runId, claim: run.claim, ownerId: run.claimAtEnd.ownerId, startedAt: run.startedAt, elapsedMs, outputs, lines }
        // A large end has a statement of its own, so that a shared one stays within MAX_SHARED_END_BYTES × MAX_RUNS_PER_STATEMENT.
        const written = endBytes(resultSize.bytes, lines) <= MAX_SHARED_END_BYTES
          ? await database(inMemoryEnds.load(end))
          : (await database(store.startAndSucceed([end])))[0]
        if (written !== true) throw new ClaimNeededError('the run was claimed or ended elsewhere')
        trace.spans?.written()
        trace.write(lines)
      } else {
        trace.write(lines)
        const ended = afterStep(await database(store.succeed(runId, run.claim, outputs, lines, acted)), execution)
        if (ended !== undefined) return ended
      }
      trace.ended('SUCCESS')
      return 'SUCCESS'
    }

    if (nodeId === undefined) return await succeed(pending)

    // The job's lock was lost, or could not be renewed: the run is left for its next owner.
    const abandoned = (): boolean => signal?.aborted === true
    let yielded = performance.now()
    for (;;) {
      if (abandoned()) return 'ABANDONED'
      const node: WorkflowNode | undefined = nodesById.get(nodeId)
      if (node === undefined || visited.has(nodeId)) {
        const error = node === undefined ? `Node not found: ${nodeId}` : `Workflow graph has a cycle at ${nodeId}`
        return await failClaimed(execution, error, nodeId)
      }
      visited.add(node.id)

      pending.lines.push({ nodeId: node.id, level: 'INFO', message: `Node ${node.id} (${node.type}) started`, at: new Date() })
      const started = performance.now()
      const nodeSpan = trace.spans?.node(node)
      let outcome: NodeResult
      try {
        outcome = await executeNode(execution, node, nodeSpan !== undefined && httpRequestTraceparent ? traceparentOf(nodeSpan) : undefined)
        if (outcome.suspendUntil !== undefined) await checkWaitingQuota(run.userId)
      } catch (err) {
        if (nodeSpan !== undefined) trace.spans?.nodeEnded(nodeSpan, err instanceof ClaimLostError ? 'stopped' : 'failure', { error: err, unwritten: run.claimAtEnd !== undefined })
        if (err instanceof InfrastructureError) throw err
        // Told not to act before an outside effect: nothing was done, nothing is written.
        if (err instanceof ClaimLostError) return refused(err.refusal, execution)
        const error = errorMessage(err)
        const failedAfter = performance.now() - started
        trace.node(node.type, 'failure', failedAfter)
        pending.lines.push({ nodeId: node.id, level: 'ERROR', message: `Node ${node.id} failed after ${Math.round(failedAfter)}ms: ${error}`, at: new Date() })
        if (abandoned()) return 'ABANDONED'
        return await failClaimed(execution, error, node.id)
      }
      const elapsed = Math.round(performance.now() - started)
      trace.node(node.type, outcome.suspendUntil === undefined ? 'success' : 'waiting', performance.now() - started)
      if (nodeSpan !== undefined) trace.spans?.nodeEnded(nodeSpan, outcome.suspendUntil === undefined ? 'success' : 'waiting', { unwritten: run.claimAtEnd !== undefined })
      pending.outputs[node.id] = outcome.output
      for (const [id, output] of Object.entries(outcome.outputs ?? {})) {
        pending.outputs[id] = output
        result[id] = output
      }

      if (outcome.suspendUntil !== undefined) {
        pending.lines.push({ nodeId: node.id, level: 'INFO', message: `Node ${node.id} waiting until ${outcome.suspendUntil.toISOString()}`, at: new Date() })
        trace.write(pending.lines)
        const suspended = afterStep(await database(store.suspend(runId, run.claim, { outputs: pending.outputs, currentNodeId: node.id }, pending.lines, pending.acted)), execution)
        if (suspended !== undefined) return suspended
        // The resumed part of the run logs with the request id too, and continues this execution's trace.
        const traceparent = trace.spans?.traceparent()
        const data: RunJobData = { runId, userId: run.userId, ...(requestId !== undefined && { requestId }), ...(traceparent !== undefined && { traceparent }) }
        const resumeJob = resumeJobId(runId, node.id)
        try {
          await queues[run.queue].add(RUN_JOB, data, {
            jobId: outcome.suspendKey === undefined ? resumeJob : `${resumeJob}:${outcome.suspendKey}`,
            delay: Math.max(0, outcome.suspendUntil.getTime() - Date.now())
          })
        } catch (err) {
          throw new InfrastructureError('Redis', err)
        }
        if (outcome.events !== undefined && outcome.events.length > 0) await dispatchWritten(runId, outcome.events)
        return 'WAITING'
      }

      pending.lines.push({ nodeId: node.id, level: 'INFO', message: `Node ${node.id} completed in ${elapsed}ms`, at: new Date() })
      pending.nodes++
      result[node.id] = outcome.output
      const next = outcome.ends === true ? null : nextNodeId(graph, node, NODE_LINK_FIELDS, outcome)
      if (next === null || next === branchJoin) return await succeed(pending)
      if (typeof outcome.next === 'string' || outcome.handles !== undefined) {
        pending.lines.push({ nodeId: node.id, level: 'DEBUG', message: `Continuing with ${next}`, at: new Date() })
      }
      nodeId = next
      const now = performance.now()
      // After an outside effect, so that it is not repeated; in a pure chain, within bounds.
      if (!isPure(node.type) || pending.nodes >= checkpointMaxNodes || now - pending.since - pending.waitedMs >= CHECKPOINT_MAX_MS) {
        if (run.claimAtEnd !== undefined) {
          await claimWithCheckpoint(execution, run.claimAtEnd, next)
          yielded = performance.now()
          continue
        }
        trace.write(pending.lines)
        const advanced = afterStep(await database(store.advance(runId, run.claim, { outputs: pending.outputs, currentNodeId: next }, pending.lines, pending.acted)), execution)
        if (advanced !== undefined) return advanced
        checkpointed(pending)
        yielded = performance.now()
      } else if (now - yielded >= YIELD_EVERY_MS) {
        await new Promise((resolve) => setImmediate(resolve))
        yielded = performance.now()
        pending.waitedMs += yielded - now
      }
    }
  }

  return { executeRun, failRun }
}

export type RunEngine = ReturnType<typeof createRunEngine>
