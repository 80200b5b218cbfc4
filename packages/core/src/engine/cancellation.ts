import { ClaimLostError, type Execution } from './execution.ts'

/**
 * Cancellation (engine/README.md, "Claims"): runs `execute` with a signal that aborts when the
 * job's does (its lock was lost) or when the run stops being this execution's (a cancel, another
 * worker's takeover), checked only while the node is still busy after every `cancelPollMs`. The
 * abort's reason is a ClaimLostError: the node stops, and nothing after it is written.
 */
export async function watchingClaim<T> (execution: Execution, cancelPollMs: number, execute: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController()
  const signal = execution.signal === undefined ? controller.signal : AbortSignal.any([execution.signal, controller.signal])
  let timer: NodeJS.Timeout | undefined
  let done = false
  const poll = (): void => {
    timer = setTimeout(() => {
      // The writer of the moment: a first write during the node hands the execution to a claimed one.
      execution.writer.lost(execution).then((refusal) => {
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
