import { SpanStatusCode, type Span } from '@opentelemetry/api'
import DataLoader from 'dataloader'
import type { Db } from '../db/client.ts'
import type { WorkflowNode } from '../db/schema/workflows.ts'
import type { Logger } from '../logger.ts'
import { runsFinished } from '../observability/metrics.ts'
import { traceRun, type RunTrace } from './run-trace.ts'
import { endSpan, inSpan, jobContext, startSpan, tracingOn } from '../observability/tracing.ts'
import { isTakeoverJobId, type Queues } from '../queues/catalog.ts'
import { childRuns, wakeRun } from './children.ts'
import { claimOwnerId, runStore, type ClaimedRun, type ClaimOwner, type FailStep, type InMemoryEnd } from './run-store.ts'
import { runWaits } from './waits.ts'
import { chatAsks } from '../chat/asks.ts'
import { agentStore } from './agents.ts'
import { eventWaits } from './event-waits.ts'
import type { Quotas } from '../users/quotas.ts'
import { nextNodeId, reachableFrom, startNode, withImplicitForks, type WorkflowGraph } from './graph.ts'
import { ClaimLostError, database, errorMessage, InfrastructureError, measurable, type Execution, type Pending, type StepRefusal } from './execution.ts'
import { createHolds, type Hold } from './holds.ts'
import { isGated } from '../runs/flow-control.ts'
import { createJsonSizer } from './json-size.ts'
import { createNodeExecution, joinIdOf } from './node-execution.ts'
import { flowOf, NODE_LINK_FIELDS, nodeDefinition } from './nodes/index.ts'
import { claimedWriter, firstWriteWriter } from './run-writer.ts'
import { createSuspension } from './suspension.ts'
import { NodeError, type CredentialResolver, type NodeDependencies, type NodeResult } from './types.ts'

/** How a call to `executeRun` left the run. */
export type RunOutcome =
  | 'SUCCESS' | 'FAILED' | 'WAITING'
  /** Cancelled or ended elsewhere while a node ran: no later node ran. */
  | 'STOPPED'
  /** Nothing to do: the run is missing or already finished. */
  | 'SKIPPED'
  /** The caller's signal was aborted (the job's lock was lost or could not be renewed): the run is left for its next owner. */
  | 'ABANDONED'
  /** Another claim owns the run (a takeover while this execution went on): its steps were refused and it stopped. */
  | 'SUPERSEDED'
  /**
   * The workflow's maxConcurrentRuns are taken (the run waits PENDING or WAITING for a slot), its flow control holds its
   * start, or a wake found the run driven: its job is held.
   */
  | 'HELD'

/** How the steps of an execution left the run: `UNCLAIMED`, a run executed before its claim was claimed elsewhere first (nothing written). */
type StepsOutcome = RunOutcome | 'UNCLAIMED'

/** Outcomes after which the run no longer holds a slot (ended, or waiting at a wait node). */
const SLOT_FREED: ReadonlySet<StepsOutcome> = new Set(['SUCCESS', 'FAILED', 'WAITING', 'STOPPED'])
/** Outcomes after which the run no longer holds a slot of its concurrency key (ended: a run at a wait keeps it). */
const KEY_FREED: ReadonlySet<StepsOutcome> = new Set(['SUCCESS', 'FAILED', 'STOPPED'])
/** Outcomes after which a child run wakes its parent (engine/README.md, "Child runs"): it ended, or was cancelled. */
const CHILD_ENDED: ReadonlySet<StepsOutcome> = new Set(['SUCCESS', 'FAILED', 'STOPPED'])

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
  hold?: Hold
  /** The job is a wake (RunJobData.wake): a run it finds RUNNING is held and tried again shortly, not skipped. */
  wake?: boolean
  /** The run's start is gated by its flow control (RunJobData.gated): it is claimed at once. */
  gated?: boolean
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

export interface RunEngineOptions {
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
   * Wakes the assistant turn a tool run belongs to once the run ended (the assistant's
   * `wakeTurn`, passed in by the worker: the engine never imports the assistant). A lost wake
   * leaves the turn to its own recheck at its time limit. @defaultValue none: no turn is woken
   */
  wakeAssistantTurn?: (turnId: string) => Promise<void>
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
   * of its HTTP call's span, unless its own headers set one.
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

/** The graph a run executes: its version's, read by its edge rule (engine/README.md, "Branches and joins"). */
const graphOf = ({ workflow }: ClaimedRun): WorkflowGraph => withImplicitForks(workflow, workflow.edgeRule)

/** The job's first try, never stalled: a start's job finds its run PENDING (a retry or a takeover's finds it RUNNING). */
const isFirstDelivery = (job: RunDelivery): boolean => job.attemptsMade === 0 && job.stalledCounter === 0

/**
 * The owner of a claim made by `job`, and the line it writes when it claims the run again after
 * a failed attempt; who takes over a RUNNING run is engine/README.md's "Claims".
 */
function ownerOf (job: RunDelivery): ClaimOwner {
  const reason = job.failedReason ?? 'an unknown error'
  const cause = /^(database|Redis) error: /.test(reason) ? `a ${reason}` : `its job failed: ${reason}`
  return {
    id: claimOwnerId(job),
    retryLine: `Run resumed after ${cause} (job attempt ${job.attemptsMade + 1})`,
    takesOver: !isFirstDelivery(job) || isTakeoverJobId(job.id ?? '')
  }
}

/**
 * Executes runs (README, Graph execution and Runs; engine/README.md). One call takes a run
 * from PENDING, WAITING or (after its worker died) RUNNING and executes nodes until the run ends,
 * suspends, or is cancelled. This file is the run loop; beside it, each concern is a system of
 * its own: the run writer (run-writer.ts: claimed, or claimed by the first write), one node's
 * attempts (node-execution.ts, attempts.ts, retry.ts), cancellation (cancellation.ts), waits and
 * resumes (suspension.ts), held jobs (holds.ts: slots, early wakes), child runs and approvals
 * (children.ts, waits.ts, through the nodes that use them).
 */
export function createRunEngine (options: RunEngineOptions) {
  const { logger, queues } = options
  const store = runStore(options.db)
  const maxAttempts = options.maxAttempts ?? 3
  const checkpointMaxNodes = options.checkpointMaxNodes ?? 100
  const httpRequestTraceparent = options.httpRequestTraceparent ?? true
  const children = childRuns({ db: options.db, queues, logger, quotas: options.quotas })
  const nodeOutputMaxBytes = options.nodeOutputMaxBytes ?? 1024 * 1024
  const executeNode = createNodeExecution({
    nodes: options.nodes,
    control: {
      children,
      waits: runWaits(options.db),
      asks: chatAsks(options.db),
      eventWaits: eventWaits(options.db),
      agents: agentStore(options.db),
      wake: async ({ runId, queue }) => { await wakeRun(queues, queue, runId) },
      limits: { subworkflowMaxDepth: options.subworkflowMaxDepth ?? 10, foreachMaxItems: options.foreachMaxItems ?? 10_000, nodeOutputMaxBytes }
    },
    credentials: options.credentials ?? withoutCredentials,
    cancelPollMs: options.cancelPollMs ?? 1000,
    nodeOutputMaxBytes,
    runResultMaxBytes: options.runResultMaxBytes ?? 8 * 1024 * 1024
  })
  const holds = createHolds({ db: options.db, queues, logger })
  const suspension = createSuspension({ store, queues, quotas: options.quotas, dispatchWritten })
  const claimed = claimedWriter({ store, failRun, dispatchWritten })
  const inMemoryStarts = new DataLoader<string, ClaimedRun | undefined>(async (runIds) => {
    const found = await store.peekStarts(runIds)
    return runIds.map((runId) => found.get(runId))
  }, { cache: false, maxBatchSize: MAX_RUNS_PER_STATEMENT, batchScheduleFn: nextTurn })
  const inMemoryEnds = new DataLoader<InMemoryEnd, { eventId: string | null } | undefined>(async (ends) => await store.startAndSucceed(ends), {
    cache: false, maxBatchSize: MAX_RUNS_PER_STATEMENT, batchScheduleFn: nextTurn
  })

  // The events of the runs that end in one turn are dispatched together: one transaction, not one each.
  const dispatches = new DataLoader<string, undefined>(async (eventIds) => {
    await options.dispatchEvents([...eventIds])
    return eventIds.map(() => undefined)
  }, { cache: false, maxBatchSize: MAX_RUNS_PER_STATEMENT, batchScheduleFn: nextTurn })

  /** Events a step wrote (the outbox), dispatched now; when that fails, the reconciler dispatches them (they are stored with the step). */
  async function dispatchWritten (runId: string, eventIds: string[]): Promise<void> {
    try {
      await Promise.all(eventIds.map(async (eventId) => await dispatches.load(eventId)))
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

  /** How an execution ends when its step was refused; a superseded one says so in the process log. */
  function refused (refusal: StepRefusal, { trace, run }: Execution): StepsOutcome {
    if (refusal === 'stopped') return 'STOPPED'
    if (refusal === 'unclaimed') return 'UNCLAIMED'
    trace.log.warn({ claim: run.claim }, 'Run step refused: another worker claimed the run; this execution stopped')
    return 'SUPERSEDED'
  }

  /**
   * Executes the run `runId` as far as it goes now. Throws only on
   * infrastructure failures (database, Redis), as an InfrastructureError: the
   * job is then retried and, as the same owner, claims the run again from the
   * node that was running without counting a takeover. A run of a workflow
   * whose maxConcurrentRuns are taken, or whose flow control holds its start, is not executed:
   * HELD, its job held by `context.hold` until a slot frees or its time comes (slots.ts, flow-control.ts).
   */
  async function executeRun (runId: string, signal?: AbortSignal, context: RunContext = {}): Promise<RunOutcome> {
    if (!tracingOn) return await executeOnce(runId, signal, context, undefined)
    const span = startSpan('run.execute', { 'switchboard.run.id': runId }, jobContext(context.traceparent))
    try {
      // Active while the run executes: its claim's statements and its lines name it (a node's span while the node runs).
      const outcome = await inSpan(span, async () => await executeOnce(runId, signal, context, span))
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
    if (context.job !== undefined && isFirstDelivery(context.job) && context.gated !== true) {
      const inMemory = await startInMemory(runId, signal, context.requestId, owner, span)
      if (inMemory !== undefined) return inMemory
    }
    let claim = await database(store.claim(runId, maxAttempts, owner))
    if (claim !== undefined && 'limited' in claim) {
      claim = await database(store.claimGated(runId, claim.limited, maxAttempts, owner))
      if (claim !== undefined && 'held' in claim) return await holds.forStart(claim.held, context.hold)
    }
    if (claim === undefined) return 'SKIPPED'
    if (!('claimed' in claim)) {
      if (!('status' in claim) || claim.status !== 'RUNNING') return 'SKIPPED'
      if (owner?.takesOver === false) return context.wake === true ? await holds.wakeLater(context.hold) : 'SKIPPED'
      const failed = await database(failRun(runId, `Run interrupted: its worker stopped ${claim.attempt + 1} times`))
      return failed ? 'FAILED' : 'SKIPPED'
    }
    const run = claim.claimed
    const outcome = await executeClaimed(run, claimed, signal, context.requestId, owner, span)
    if (run.maxConcurrentRuns !== null && SLOT_FREED.has(outcome)) await holds.wakeWaiting(run.workflowId)
    if (run.flowControl?.concurrencyKey !== undefined && KEY_FREED.has(outcome)) await holds.freeKey(run.id)
    // A claimed run's steps are never `unclaimed`.
    return outcome === 'UNCLAIMED' ? 'SKIPPED' : outcome
  }

  /**
   * A PENDING run of a workflow without a maxConcurrentRuns, whose start no flow control gates, of at most `checkpointMaxNodes`
   * nodes, all pure or writing their own checkpoint before their outside effect, is executed
   * before it is claimed, its first write claiming it (engine/README.md, "The first-write path").
   * Undefined when the run is not such a run, or was claimed or ended before that write: it is
   * then claimed and executed as usual, its pure nodes run again.
   */
  async function startInMemory (runId: string, signal: AbortSignal | undefined, requestId: string | undefined, owner: ClaimOwner | undefined, span: Span | undefined): Promise<RunOutcome | undefined> {
    const run = await database(inMemoryStarts.load(runId))
    if (run === undefined || run.maxConcurrentRuns !== null || isGated(run.flowControl)) return undefined
    // An implicit fork is a parallel node: such a run is not executed before its claim.
    const { nodes } = graphOf(run)
    if (nodes.length > checkpointMaxNodes || !nodes.every((node) => runsBeforeItsFirstWrite(node.type))) return undefined
    const writer = firstWriteWriter({ store, ends: inMemoryEnds, ownerId: owner?.id, started: performance.now(), claimed, dispatchWritten })
    const outcome = await executeClaimed(run, writer, signal, requestId, owner, span)
    return outcome === 'UNCLAIMED' ? undefined : outcome
  }

  /**
   * Executes a run with `writer`; a child that ended wakes its parent (engine/README.md, "Child
   * runs"), an assistant's tool run its turn.
   */
  async function executeClaimed (run: ClaimedRun, writer: Execution['writer'], signal: AbortSignal | undefined, requestId: string | undefined, owner: ClaimOwner | undefined, span: Span | undefined): Promise<StepsOutcome> {
    const outcome = await executeSteps(run, writer, signal, requestId, owner, span)
    if (run.parent !== null && CHILD_ENDED.has(outcome)) await children.wakeParent(run.parent)
    if (run.assistantTurnId !== null && CHILD_ENDED.has(outcome) && options.wakeAssistantTurn !== undefined) {
      await options.wakeAssistantTurn(run.assistantTurnId).catch((err: unknown) => {
        logger.warn({ err, runId: run.id, turnId: run.assistantTurnId }, 'assistant turn of an ended tool run not woken: its recheck will')
      })
    }
    return outcome
  }

  /** The run loop: node after node, a checkpoint when one is due, until the run ends, suspends or stops. */
  async function executeSteps (run: ClaimedRun, writer: Execution['writer'], signal: AbortSignal | undefined, requestId: string | undefined, owner: ClaimOwner | undefined, span: Span | undefined): Promise<StepsOutcome> {
    const trace = traceRun(logger, run, requestId, span)
    const firstLines = trace.claimed(owner?.retryLine)
    const graph = graphOf(run)
    const nodesById = new Map(graph.nodes.map((node) => [node.id, node]))
    const result = { ...run.result }
    // Sizes of the objects of this run's result, measured once; they are never changed once stored.
    const sizer = createJsonSizer()
    const visited = new Set<string>()
    let nodeId = run.currentNodeId ?? startNode(graph, NODE_LINK_FIELDS)?.id
    const pending: Pending = { outputs: {}, lines: firstLines, nodes: 0, since: performance.now(), waitedMs: 0, acted: false }
    const execution: Execution = { run, graph, trace, pending, result, resultSize: { bytes: measurable(sizer, result) }, sizer, signal, writer }
    // A parallel branch ends where it meets its merge (the parent's run goes on from there), or at its own end when there is none.
    const fork = run.parent?.branch === true ? nodesById.get(run.parent.nodeId) : undefined
    const branchJoin = fork !== undefined && flowOf(fork) === 'fork' ? joinIdOf(graph, fork) : undefined

    /** The last node finished (or there was none): the run ends SUCCESS with what is pending. */
    const succeed = async (): Promise<StepsOutcome> => {
      const written = await execution.writer.succeed(execution)
      if (written !== 'written') return refused(written, execution)
      trace.ended('SUCCESS')
      return 'SUCCESS'
    }
    /** A node failed: the run ends FAILED at `failedAt` with what was pending. */
    const fail = async (error: string, failedAt: string): Promise<StepsOutcome> => {
      const failed = await execution.writer.fail(execution, error, failedAt)
      return failed === 'FAILED' ? 'FAILED' : refused(failed, execution)
    }

    if (nodeId === undefined) return await succeed()

    const pureRest = new Map<string, boolean>()
    /** Whether every node reachable from `from` is pure, within a checkpoint's bound of nodes. */
    const pureToTheEnd = (from: string): boolean => {
      let pure = pureRest.get(from)
      if (pure === undefined) {
        pure = reachableFrom(graph, from, NODE_LINK_FIELDS, checkpointMaxNodes)?.every((node) => isPure(node.type)) === true
        pureRest.set(from, pure)
      }
      return pure
    }

    // The job's lock was lost, or could not be renewed: the run is left for its next owner.
    const abandoned = (): boolean => signal?.aborted === true
    let yielded = performance.now()
    for (;;) {
      if (abandoned()) return 'ABANDONED'
      const node: WorkflowNode | undefined = nodesById.get(nodeId)
      if (node === undefined || visited.has(nodeId)) return await fail(node === undefined ? `Node not found: ${nodeId}` : `Workflow graph has a cycle at ${nodeId}`, nodeId)
      visited.add(node.id)

      pending.lines.push({ nodeId: node.id, level: 'INFO', message: `Node ${node.id} (${node.type}) started`, at: new Date() })
      const started = performance.now()
      const nodeSpan = trace.spans?.node(node)
      let outcome: NodeResult
      try {
        // The node's span is the active one while it runs: its statements' and HTTP calls' spans are its children.
        outcome = nodeSpan === undefined
          ? await executeNode(execution, node, false)
          : await inSpan(nodeSpan, async () => await executeNode(execution, node, httpRequestTraceparent))
        if (outcome.suspendUntil !== undefined) await suspension.checkWaitingQuota(run.userId)
      } catch (err) {
        if (nodeSpan !== undefined) trace.spans?.nodeEnded(nodeSpan, err instanceof ClaimLostError ? 'stopped' : 'failure', { error: err, unwritten: execution.writer.unwritten })
        if (err instanceof InfrastructureError) throw err
        // Told not to act before an outside effect: nothing was done, nothing is written.
        if (err instanceof ClaimLostError) return refused(err.refusal, execution)
        const error = errorMessage(err)
        const failedAfter = performance.now() - started
        trace.node(node.type, 'failure', failedAfter)
        pending.lines.push({ nodeId: node.id, level: 'ERROR', message: `Node ${node.id} failed after ${Math.round(failedAfter)}ms: ${error}`, at: new Date() })
        if (abandoned()) return 'ABANDONED'
        return await fail(error, node.id)
      }
      const elapsed = Math.round(performance.now() - started)
      trace.node(node.type, outcome.suspendUntil === undefined ? 'success' : 'waiting', performance.now() - started)
      if (nodeSpan !== undefined) trace.spans?.nodeEnded(nodeSpan, outcome.suspendUntil === undefined ? 'success' : 'waiting', { unwritten: execution.writer.unwritten })
      pending.outputs[node.id] = outcome.output

      if (outcome.suspendUntil !== undefined) {
        const suspended = await suspension.suspend(execution, node, { ...outcome, suspendUntil: outcome.suspendUntil }, requestId)
        return suspended === 'written' ? 'WAITING' : refused(suspended, execution)
      }

      pending.lines.push({ nodeId: node.id, level: 'INFO', message: `Node ${node.id} completed in ${elapsed}ms`, at: new Date() })
      pending.nodes++
      result[node.id] = outcome.output
      for (const [id, output] of Object.entries(outcome.outputs ?? {})) {
        pending.outputs[id] = output
        result[id] = output
      }
      const next = outcome.ends === true ? null : nextNodeId(graph, node, NODE_LINK_FIELDS, outcome)
      if (next === null || next === branchJoin || node.id === run.untilNodeId) return await succeed()
      if (typeof outcome.next === 'string' || outcome.handles !== undefined) {
        pending.lines.push({ nodeId: node.id, level: 'DEBUG', message: `Continuing with ${next}`, at: new Date() })
      }
      nodeId = next
      const now = performance.now()
      // After an outside effect, so that it is not repeated, unless only pure nodes can follow it: then
      // the run's end is that checkpoint (engine/README.md, Checkpoints). In a pure chain, within bounds.
      if ((!isPure(node.type) && !pureToTheEnd(next)) || pending.nodes >= checkpointMaxNodes || now - pending.since - pending.waitedMs >= CHECKPOINT_MAX_MS) {
        const advanced = await execution.writer.advance(execution, next)
        if (advanced !== 'written') return refused(advanced, execution)
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
