import type DataLoader from 'dataloader'
import type { RunTrace } from './run-trace.ts'
import type { FailStep, InMemoryEnd, LogLine, runStore } from './run-store.ts'
import { checkpointed, database, ClaimLostError, type Execution, type RunWriter } from './execution.ts'
import { jsonStringBytes } from './json-size.ts'

/**
 * The two run writers (`RunWriter`, execution.ts; engine/README.md, "Checkpoints" and "The
 * first-write path"): the claimed one, and the one of a run executed before it is claimed.
 */

type RunStore = ReturnType<typeof runStore>

/** Ends a run FAILED with its event (the engine's `failRun`); false when the run was not in `step.from`. */
type FailRun = (runId: string, error: string, step: FailStep & { trace?: RunTrace }) => Promise<boolean>

/** Dispatches the events a step wrote, right after its commit (the engine's `dispatchWritten`). */
type DispatchWritten = (runId: string, eventIds: string[]) => Promise<void>

interface ClaimedWriterOptions {
  store: RunStore
  failRun: FailRun
  dispatchWritten: DispatchWritten
}

/** The writer of a claimed run: every step is written only while the run is RUNNING under `run.claim`. */
export function claimedWriter ({ store, failRun, dispatchWritten }: ClaimedWriterOptions): RunWriter {
  return {
    unwritten: false,

    async beforeEffect ({ run, pending, trace }, nodeId) {
      trace.write(pending.lines)
      // Pure nodes ran since the checkpoint, or the node wrote its own progress (`beforeEffect`'s).
      const progress = pending.nodes === 0 && !(nodeId in pending.outputs) ? undefined : { outputs: pending.outputs, currentNodeId: nodeId }
      const outcome = await database(store.record(run.id, run.claim, pending.lines, progress))
      if (outcome !== 'written') throw new ClaimLostError(outcome)
      checkpointed(pending)
      pending.acted = true
    },

    async beforeWait () {},

    async advance ({ run, pending, trace }, next) {
      trace.write(pending.lines)
      const outcome = await database(store.advance(run.id, run.claim, { outputs: pending.outputs, currentNodeId: next }, pending.lines, pending.acted))
      if (outcome === 'written') checkpointed(pending)
      return outcome
    },

    async suspend ({ run, pending, trace }, nodeId) {
      trace.write(pending.lines)
      return await database(store.suspend(run.id, run.claim, { outputs: pending.outputs, currentNodeId: nodeId }, pending.lines, pending.acted))
    },

    async succeed ({ run, pending, trace }) {
      trace.write(pending.lines)
      const { outcome, eventId } = await database(store.succeed(run.id, run.claim, pending.outputs, pending.lines, pending.acted))
      if (eventId !== null) await dispatchWritten(run.id, [eventId])
      return outcome
    },

    async fail ({ run, pending, trace }, error, nodeId) {
      const progress = { outputs: pending.outputs, currentNodeId: nodeId }
      if (await database(failRun(run.id, error, { lines: pending.lines, from: { claim: run.claim }, trace, progress, keepLines: pending.acted }))) return 'FAILED'
      return await database(store.lost(run.id, run.claim)) ?? 'stopped'
    },

    async lost ({ run }) {
      return await store.lost(run.id, run.claim)
    }
  }
}

/**
 * In-memory ends of at most this many bytes (result and lines, as JSON) share a statement, so a
 * shared one carries at most 8 MiB, as a group of starts does; a larger one is written alone.
 */
const MAX_SHARED_END_BYTES = 80 * 1024

/** What an end sends at most: its result's size (undefined: not measurable) and its lines. */
const endBytes = (resultBytes: number | undefined, lines: LogLine[]): number =>
  resultBytes === undefined ? Infinity : lines.reduce((bytes, line) => bytes + jsonStringBytes(line.message) + 100, resultBytes)

interface FirstWriteWriterOptions {
  store: RunStore
  /** The ends of the executions of one turn, written by one statement (`startAndSucceed`). */
  ends: DataLoader<InMemoryEnd, { eventId: string | null } | undefined>
  dispatchWritten: DispatchWritten
  /** The claim owner the first write records. */
  ownerId: string | undefined
  /** When the execution started (performance.now()): the run's duration when it ends in memory. */
  started: number
  /** The writer the execution goes on with once its first write claimed the run. */
  claimed: RunWriter
}

/**
 * The writer of a PENDING run executed before it is claimed (`peekStarts`): its first write
 * claims it, either its end (`startAndSucceed`, shared with the ends of the same turn) or a
 * checkpoint (`startAndRecord`: before an outside effect, a retry's wait, a failure, or when a
 * pure chain's checkpoint is due), after which the execution goes on with the claimed writer.
 * Refused (`unclaimed`) when the run was claimed or ended elsewhere meanwhile: nothing was
 * written, and the usual claim takes the run.
 */
export function firstWriteWriter ({ store, ends, ownerId, started, claimed, dispatchWritten }: FirstWriteWriterOptions): RunWriter {
  /** Claims the run with what is pending, going on at `currentNodeId`. */
  async function claim (execution: Execution, currentNodeId: string): Promise<boolean> {
    const { run, pending, trace } = execution
    const lines = pending.lines
    const newClaim = await database(store.startAndRecord(run.id, run.claim, ownerId, run.startedAt, lines, { outputs: pending.outputs, currentNodeId }))
    if (newClaim === undefined) return false
    run.claim = newClaim
    execution.writer = claimed
    trace.spans?.written()
    trace.write(lines)
    checkpointed(pending)
    return true
  }

  const claimOrRefuse = async (execution: Execution, nodeId: string): Promise<void> => {
    if (!await claim(execution, nodeId)) throw new ClaimLostError('unclaimed')
  }

  return {
    unwritten: true,

    async beforeEffect (execution, nodeId) {
      await claimOrRefuse(execution, nodeId)
      execution.pending.acted = true
    },

    beforeWait: claimOrRefuse,

    advance: async (execution, next) => await claim(execution, next) ? 'written' : 'unclaimed',

    async suspend (execution, nodeId) {
      if (!await claim(execution, nodeId)) return 'unclaimed'
      return await claimed.suspend(execution, nodeId)
    },

    async succeed ({ run, pending, trace, resultSize }) {
      const elapsedMs = Math.round(performance.now() - started)
      const end: InMemoryEnd = { runId: run.id, claim: run.claim, ownerId, startedAt: run.startedAt, elapsedMs, outputs: pending.outputs, lines: pending.lines }
      // A large end has a statement of its own, so that a shared one stays within MAX_SHARED_END_BYTES × the runs of a statement.
      const written = endBytes(resultSize.bytes, pending.lines) <= MAX_SHARED_END_BYTES
        ? await database(ends.load(end))
        : (await database(store.startAndSucceed([end])))[0]
      if (written === undefined) return 'unclaimed'
      trace.spans?.written()
      trace.write(pending.lines)
      if (written.eventId !== null) await dispatchWritten(run.id, [written.eventId])
      return 'written'
    },

    async fail (execution, error, nodeId) {
      if (!await claim(execution, nodeId)) return 'unclaimed'
      return await claimed.fail(execution, error, nodeId)
    },

    // Nothing is claimed yet, so nothing can be lost: a node reaching its effect claims the run.
    lost: async () => undefined
  }
}
