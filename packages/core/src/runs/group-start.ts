import { setTimeout as sleep } from 'node:timers/promises'
import type { Span } from '@opentelemetry/api'
import { sql } from 'drizzle-orm'
import { storableJson } from '../db/storable.ts'
import { serviceUnavailable } from '../errors.ts'
import { endSpan, startSpan, traceparentOf, tracingOn } from '../observability/tracing.ts'
import { TimeoutError, type Deadline } from '../timeout.ts'
import { enqueueRuns, insertRuns, withdrawRuns, type CreatedRun, type RunServiceDeps, type RunStartPoint, type RunTarget, type StartedRun } from './start.ts'

/** A start for a request that is answered by `deadline`: fire, the inbound webhook, a run's retry. */
export interface RequestStart {
  workflow: RunTarget
  triggerData?: unknown
  /** The exact bytes of an inbound webhook, for verify_signature. */
  rawBody?: Buffer
  /** Same key for the same workflow within 24 hours: the first run is returned and nothing is created. */
  idempotencyKey?: string
  /** The request (X-Request-Id), carried in the run's job. */
  requestId?: string
  /** A replay: the run it copies (its triggerData and raw body) and the version it executes. */
  retriedFrom?: string
  workflowVersion?: number
  /** A test run, and the node it ends after (POST /workflows/:id/test). */
  test?: boolean
  untilNodeId?: string
  /** A retry from a node: where it starts, with the outputs before it. */
  startAt?: RunStartPoint
  /** The run's tags (`POST …/fire?tags=`), instead of its workflow's runTags. */
  tags?: string[]
  deadline: Deadline
}

export interface GroupStartOptions {
  /** Most runs written by one statement and queued by one addBulk. */
  maxRuns: number
  /** Most bytes of triggerData and raw bodies in one group, so one statement never carries hundreds of megabytes. */
  maxBytes: number
  /** Groups written at the same time: the next one forms while these wait for their commit. */
  maxInFlight: number
  /**
   * Jobs being queued (after their commit) at most: beyond, the runs of a group are left to the
   * reconciler, so a Redis that does not answer cannot fill the api's memory.
   */
  maxEnqueueing: number
}

export const GROUP_START_DEFAULTS: GroupStartOptions = { maxRuns: 500, maxBytes: 8 * 1024 * 1024, maxInFlight: 2, maxEnqueueing: 50_000 }

/**
 * A COMMIT is sent only while this much of its member's time is left: enough for a healthy
 * Postgres to answer it, so that an answer whose commit is in doubt stays rare.
 */
const COMMIT_RESERVE_MS = 250

interface Member {
  run: RequestStart
  triggerJson: string | undefined
  bytes: number
  /** Answered (accepted or refused): later outcomes of its group no longer reach the caller. */
  settled: boolean
  /** Its group's COMMIT was sent: an error answer from now on is in doubt. */
  commitSent: boolean
  /** Answered with an error after its COMMIT was sent: its run may exist. */
  inDoubt: boolean
  /** Answers it at its deadline, wherever it is then (waiting for a group, or in one). */
  timer: NodeJS.Timeout
  /** `run.start`, from the call to its answer, while tracing is on; its traceparent goes with the job. */
  span: Span | undefined
  resolve: (started: StartedRun) => void
  reject: (err: unknown) => void
}

export interface GroupStarter {
  /**
   * Resolves once the run is committed, having shared its transaction with the starts around
   * it; the job is queued after. Rejects SERVICE_UNAVAILABLE when the run could not be
   * committed by the deadline: refused (no run) when its COMMIT was not sent, in doubt (the run
   * may exist and will run) when it was.
   */
  start: (run: RequestStart) => Promise<StartedRun>
  /** Waits for the jobs being queued (a closing api), at most `ms`. */
  drain: (ms: number) => Promise<void>
}

/** A member's `run.start` span ends with its answer: the run it got, or the refusal. */
function endStartSpan (span: Span, outcome: { started: StartedRun } | { error: unknown }): void {
  if ('error' in outcome) {
    endSpan(span, outcome.error)
    return
  }
  span.setAttributes({ 'switchboard.run.id': outcome.started.runId, 'switchboard.run.created': outcome.started.created })
  endSpan(span)
}

const timeIsUp = (what: string): Error => serviceUnavailable(new TimeoutError(`${what}: the request's deadline has passed`))

/**
 * Group commit of the runs a process starts for requests. A start that finds fewer than
 * `maxInFlight` groups being written goes out at the end of the event loop's turn, with every
 * start that arrived in that turn; the starts that arrive while groups are being written wait
 * and go out together when one is done. Each group is one transaction (begin, insert, commit)
 * and, after it, one addBulk per queue, whatever its size. Nobody waits for a timer: a lone
 * request goes out at once, and the group grows only with the load.
 *
 * Each member keeps its own deadline (docs/decisions.md, "Accepted means committed"): the
 * server's limits on the transaction are the longest member's time; a member is answered by
 * its own deadline whatever the group does; before the COMMIT, the runs of members whose time
 * is up are taken out of the transaction, so a refused member leaves no run and never fails
 * the others.
 */
export function createGroupStarter (deps: RunServiceDeps, options: GroupStartOptions = GROUP_START_DEFAULTS): GroupStarter {
  const waiting: Member[] = []
  let inFlight = 0
  let scheduled = false
  let enqueueing = 0
  const enqueues = new Set<Promise<void>>()

  const schedule = (): void => {
    if (scheduled) return
    scheduled = true
    setImmediate(pump)
  }

  function takeGroup (): Member[] {
    let bytes = 0
    let count = 0
    while (count < waiting.length && count < options.maxRuns && (count === 0 || bytes + waiting[count]!.bytes <= options.maxBytes)) {
      bytes += waiting[count]!.bytes
      count++
    }
    return waiting.splice(0, count)
  }

  function pump (): void {
    scheduled = false
    while (inFlight < options.maxInFlight && waiting.length > 0) {
      inFlight++
      write(takeGroup()).finally(() => {
        inFlight--
        if (waiting.length > 0) schedule()
      })
    }
  }

  const settle = (member: Member, outcome: { started: StartedRun } | { error: unknown }): void => {
    if (member.settled) return
    member.settled = true
    clearTimeout(member.timer)
    if (member.span !== undefined) endStartSpan(member.span, outcome)
    if ('started' in outcome) member.resolve(outcome.started)
    else member.reject(outcome.error)
  }

  /** A member's deadline came: it is answered now, whatever its group is doing. */
  const expire = (member: Member): void => {
    if (member.settled) return
    member.inDoubt = member.commitSent
    settle(member, { error: timeIsUp(member.commitSent ? 'commit the run: its outcome is unknown' : 'store the run') })
  }

  /** Queued after the commit; the members were answered already. */
  function enqueue (created: CreatedRun[]): void {
    if (created.length === 0) return
    if (enqueueing + created.length > options.maxEnqueueing) {
      deps.logger?.warn({ runs: created.length, enqueueing }, 'runs stored but not queued: too many jobs still being queued; the reconciler will queue them')
      return
    }
    enqueueing += created.length
    const queued = enqueueRuns(deps, created).finally(() => {
      enqueueing -= created.length
      enqueues.delete(queued)
    })
    enqueues.add(queued)
  }

  async function write (group: Member[]): Promise<void> {
    const timeIsUpFor = (member: Member): boolean => member.settled || member.run.deadline.remainingMs(COMMIT_RESERVE_MS) <= 0
    const live = group.filter((member) => {
      if (!timeIsUpFor(member)) return true
      settle(member, { error: timeIsUp('store the run') })
      return false
    })
    if (live.length === 0) return
    if (tracingOn) for (const member of live) member.span?.setAttribute('switchboard.group.size', live.length)
    let started: StartedRun[] = []
    let created: CreatedRun[] = []
    try {
      await deps.db.transaction(async (tx) => {
        if (live.every(timeIsUpFor)) throw new TimeoutError('store the runs: every request was answered already')
        // The server ends the transaction if the client stops answering (set with the insert: one round trip).
        const serverLimit = String(Math.ceil(Math.max(...live.map((member) => member.run.deadline.remainingMs()))))
        const [, inserted] = await Promise.all([
          tx.execute(sql`select set_config('statement_timeout', ${serverLimit}, true), set_config('idle_in_transaction_session_timeout', ${serverLimit}, true)`),
          insertRuns(tx, { runs: live.map(({ run, triggerJson, span }) => ({ ...run, triggerData: undefined, triggerJson, traceparent: span === undefined ? undefined : traceparentOf(span) })) })
        ])
        started = inserted.started
        created = inserted.created
        // The runs of members whose time is up leave the transaction before its COMMIT. The last
        // check and the COMMIT run without a turn of the event loop between them, so no member's
        // timer can answer it in between.
        for (;;) {
          if (live.every(timeIsUpFor)) throw new TimeoutError('commit the runs: every request\'s deadline has passed')
          const kept = new Set(live.flatMap((member, i) => timeIsUpFor(member) ? [] : [started[i]!.runId]))
          const withdrawn = created.filter(({ runId }) => !kept.has(runId))
          if (withdrawn.length === 0) {
            live.forEach((member, i) => { if (!kept.has(started[i]!.runId)) settle(member, { error: timeIsUp('store the run') }) })
            break
          }
          await withdrawRuns(tx, withdrawn.map(({ runId }) => runId), created.map(({ runId }) => runId))
          created = created.filter(({ runId }) => kept.has(runId))
        }
        for (const member of live) member.commitSent = true
      })
    } catch (err) {
      for (const member of live) {
        if (!member.settled) member.inDoubt = member.commitSent
        settle(member, { error: err instanceof TimeoutError ? serviceUnavailable(err) : err })
      }
      logInDoubt(live, started, 'the COMMIT was sent but its outcome is unknown')
      return
    }
    logInDoubt(live, started, 'the COMMIT was confirmed after the answer')
    live.forEach((member, i) => { settle(member, { started: started[i]! }) })
    enqueue(created)
  }

  /**
   * Requests answered 503 (the webhook: 500) whose runs may exist: they will run. A retry with
   * the same Idempotency-Key gets the same run; one without may start a second (README, Guarantees).
   */
  function logInDoubt (live: Member[], started: StartedRun[], why: string): void {
    const members = live.flatMap((member, i) => member.inDoubt ? [{ requestId: member.run.requestId ?? null, runId: started[i]?.runId ?? null }] : [])
    if (members.length === 0) return
    deps.logger?.warn({ requests: members }, `requests answered with an error whose runs may exist and will run: ${why}`)
  }

  return {
    start: async (run) => await new Promise<StartedRun>((resolve, reject) => {
      // A replay's triggerData is copied from the run it replays by the insert itself.
      const triggerJson = run.retriedFrom !== undefined && run.triggerData === undefined ? undefined : storableJson(run.triggerData ?? null)
      // A child of the context active at the call: the request's span.
      const span = tracingOn ? startSpan('run.start', { 'switchboard.workflow.id': run.workflow.id }) : undefined
      const member: Member = { run, triggerJson, bytes: (triggerJson?.length ?? 0) + (run.rawBody?.length ?? 0) * 2, settled: false, commitSent: false, inDoubt: false, timer: undefined as unknown as NodeJS.Timeout, span, resolve, reject }
      member.timer = setTimeout(() => { expire(member) }, run.deadline.remainingMs())
      waiting.push(member)
      if (inFlight < options.maxInFlight) schedule()
    }),
    async drain (ms) {
      await Promise.race([Promise.allSettled([...enqueues]), sleep(ms, undefined, { ref: false })])
    }
  }
}
