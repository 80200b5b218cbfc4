import { DrizzleQueryError } from 'drizzle-orm'
import type { RunTrace } from './run-trace.ts'
import type { ClaimedRun, LogLine, Refusal } from './run-store.ts'
import type { WorkflowGraph } from './graph.ts'
import { UnserializableValueError, type JsonSizer } from './json-size.ts'

/**
 * What the engine's systems share about one execution of a run (engine/README.md): the run as its
 * claim read it, what happened since the last checkpoint, the result so far, and the writer its
 * steps go through.
 */

/** What an execution did since its last checkpoint, written by the next one: the outputs of the nodes that finished, their log lines in order. */
export interface Pending {
  outputs: Record<string, unknown>
  lines: LogLine[]
  /** Nodes finished since the checkpoint. */
  nodes: number
  /** When the checkpoint was written (performance.now()). */
  since: number
  /** Of the time since, how long the execution waited: yielding to other work of the process, or loading credentials. */
  waitedMs: number
  /**
   * A node acted on the outside world since the checkpoint (its checkpoint before the effect was
   * written): the lines say what it did, so they are written even if the next step is refused (a
   * cancel). Pure nodes' lines go with their outputs: a refused step writes neither, so a cancelled
   * run's log and result end at its last checkpoint (README, Runs: no later node runs).
   */
  acted: boolean
}

/** The size of a run's result as JSON, kept up to date as nodes add to it. */
export interface ResultSize { bytes: number | undefined }

/** One execution of a run: what each of its steps reads and writes, passed as one. */
export interface Execution {
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
  /** Where its steps are written: replaced by the claimed writer once a first write claimed the run. */
  writer: RunWriter
}

/** Empties `pending` once it is written. */
export function checkpointed (pending: Pending): void {
  pending.outputs = {}
  pending.lines = []
  pending.nodes = 0
  pending.since = performance.now()
  pending.waitedMs = 0
  pending.acted = false
}

/** `value`'s size, or undefined when it cannot be serialized. */
export function measurable (sizer: JsonSizer, value: unknown): number | undefined {
  try {
    return sizer.measure(value)
  } catch (err) {
    if (err instanceof UnserializableValueError) return undefined
    throw err
  }
}

export const errorMessage = (err: unknown): string => err instanceof Error && err.message !== '' ? err.message : String(err)

/**
 * A database or Redis failure while executing a run: `executeRun` throws it,
 * the job fails and BullMQ retries it (JOB_OPTIONS: 5 attempts, backoff 1, 2,
 * 4, 8 s), and the retry claims the run again as the same owner. Its message
 * (the job's failedReason in Redis) names the store and the driver's error,
 * never a statement or its parameters.
 */
export class InfrastructureError extends Error {
  override name = 'InfrastructureError'
  constructor (store: 'database' | 'Redis', cause: unknown) {
    super(`${store} error: ${errorMessage(cause instanceof DrizzleQueryError ? cause.cause ?? cause : cause)}`, { cause })
  }
}

/** Runs `work` against `store`: its failures are infrastructure failures. */
async function against<T> (store: 'database' | 'Redis', work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (err) {
    throw new InfrastructureError(store, err)
  }
}

export const database = async <T>(work: Promise<T>): Promise<T> => await against('database', work)
export const redis = async <T>(work: Promise<T>): Promise<T> => await against('Redis', work)

/**
 * Why a step was not written: the run is no longer RUNNING under this execution's claim
 * (`stopped`, `superseded`), or, before its first write, it was claimed or ended elsewhere
 * (`unclaimed`: nothing was written, and the usual claim takes it).
 */
export type StepRefusal = Refusal | 'unclaimed'

/** A node was told not to act: its step was refused (`StepRefusal`). */
export class ClaimLostError extends Error {
  override name = 'ClaimLostError'
  constructor (readonly refusal: StepRefusal) {
    super(refusal === 'superseded' ? 'the run was claimed by another worker' : refusal === 'unclaimed' ? 'the run was claimed elsewhere before its first write' : 'the run is no longer running')
  }
}

/**
 * How an execution writes its steps (engine/README.md, "Checkpoints" and "The first-write path").
 * Two writers: the claimed one (`claimedWriter`), every step fenced by the run's claim; and the
 * one of a run executed before it is claimed (`firstWriteWriter`), whose first write claims the
 * run and hands the execution to a claimed writer. Each step answers `written` or why it was
 * refused; a refusal inside a node (its checkpoint before an effect) is a ClaimLostError.
 */
export interface RunWriter {
  /** Nothing of the run is written yet (its node spans say so). */
  readonly unwritten: boolean
  /** The checkpoint before a node's outside effect: what is pending, the node's lines so far. Throws ClaimLostError when refused: the node must not act. */
  beforeEffect: (execution: Execution, nodeId: string) => Promise<void>
  /** Before a retry's wait: the run is claimed with what it did, so that nothing runs again. Throws ClaimLostError when refused. */
  beforeWait: (execution: Execution, nodeId: string) => Promise<void>
  /** A checkpoint: the nodes finished since the last one, and the run goes on at `next`. */
  advance: (execution: Execution, next: string) => Promise<StepOutcome>
  /** The run waits at `nodeId` (WAITING) with what is pending. */
  suspend: (execution: Execution, nodeId: string) => Promise<StepOutcome>
  /** The run ends SUCCESS with what is pending. */
  succeed: (execution: Execution) => Promise<StepOutcome>
  /** The run ends FAILED at `nodeId` with what is pending. */
  fail: (execution: Execution, error: string, nodeId: string) => Promise<'FAILED' | StepRefusal>
  /** While a node is busy: why the run is no longer this execution's (a cancel, a takeover), or undefined while it is. */
  lost: (execution: Execution) => Promise<Refusal | undefined>
}

export type StepOutcome = 'written' | StepRefusal
