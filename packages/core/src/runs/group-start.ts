import { storableJson } from '../db/storable.ts'
import { serviceUnavailable } from '../errors.ts'
import { Deadline, TimeoutError } from '../timeout.ts'
import { QUEUE_RESERVE_MS, startRuns, type RunServiceDeps, type StartDeadline, type StartedRun, type StartRunInput } from './start.ts'

/** A start that has a request's time limits: fire and the inbound webhook. */
export type RequestStart = Omit<StartRunInput, 'limits'> & { limits: StartDeadline }

export interface GroupStartOptions {
  /** Most runs written by one statement and queued by one addBulk. */
  maxRuns: number
  /** Most bytes of triggerData and raw bodies in one group, so one statement never carries hundreds of megabytes. */
  maxBytes: number
  /** Groups written at the same time: the next one forms while these wait for their commit. */
  maxInFlight: number
}

export const GROUP_START_DEFAULTS: GroupStartOptions = { maxRuns: 500, maxBytes: 8 * 1024 * 1024, maxInFlight: 2 }

interface Waiting {
  run: RequestStart
  triggerJson: string
  bytes: number
  resolve: (started: StartedRun) => void
  reject: (err: unknown) => void
}

export interface GroupStarter {
  /** Resolves once the run is stored and queued, like `startRun`, having shared its statements with the starts around it. */
  start: (run: RequestStart) => Promise<StartedRun>
}

/**
 * Group commit of the runs a process starts for requests. A start that finds fewer than
 * `maxInFlight` groups being written goes out at the end of the event loop's turn, with every
 * start that arrived in that turn; the starts that arrive while groups are being written wait
 * and go out together when one is done. Each group is one `startRuns`: one transaction (begin,
 * insert, commit) and one addBulk per queue, whatever its size, instead of one each per
 * request. Nobody waits for a timer: a lone request goes out at once, and the group grows only
 * with the load. Each caller is answered only once its run is stored and queued, or is given
 * the group's error (no run of a failed group is left behind: `startRuns` takes them back).
 * A group takes the earliest deadline of its members; a member whose deadline has no time left
 * for a commit is refused before the group is written, so it never shortens the others'.
 */
export function createGroupStarter (deps: RunServiceDeps, options: GroupStartOptions = GROUP_START_DEFAULTS): GroupStarter {
  const waiting: Waiting[] = []
  let inFlight = 0
  let scheduled = false

  const schedule = (): void => {
    if (scheduled) return
    scheduled = true
    setImmediate(pump)
  }

  function takeGroup (): Waiting[] {
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

  async function write (group: Waiting[]): Promise<void> {
    const live: Waiting[] = []
    for (const member of group) {
      if (member.run.limits.deadline.remainingMs(QUEUE_RESERVE_MS) > 0) live.push(member)
      else member.reject(serviceUnavailable(new TimeoutError('store the run: the request\'s deadline has passed')))
    }
    if (live.length === 0) return
    const limits: StartDeadline = {
      deadline: new Deadline(Math.min(...live.map(({ run }) => run.limits.deadline.at))),
      settleBy: Math.min(...live.map(({ run }) => run.limits.settleBy))
    }
    try {
      const started = await startRuns(deps, {
        runs: live.map(({ run, triggerJson }) => ({
          workflow: run.workflow,
          triggerJson,
          rawBody: run.rawBody,
          idempotencyKey: run.idempotencyKey,
          requestId: run.requestId
        })),
        limits
      })
      live.forEach((member, i) => { member.resolve(started[i]!) })
    } catch (err) {
      for (const member of live) member.reject(err)
    }
  }

  return {
    start: async (run) => await new Promise<StartedRun>((resolve, reject) => {
      const triggerJson = storableJson(run.triggerData ?? null)
      waiting.push({ run, triggerJson, bytes: triggerJson.length + (run.rawBody?.length ?? 0) * 2, resolve, reject })
      if (inFlight < options.maxInFlight) schedule()
    })
  }
}
