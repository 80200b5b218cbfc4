import { setTimeout as sleep } from 'node:timers/promises'
import { NodeError, RetryableNodeError, type NodeResult } from './types.ts'

/**
 * One attempt of a node and the waits between attempts, within their time limits (README,
 * Retries and time-outs): the engine's loop of attempts (engine.ts) decides whether another is
 * made (retry.ts).
 */

/** The signal of pure nodes, which nothing outside the run can stop: nothing aborts them. */
export const neverAborted: AbortSignal = new AbortController().signal

/** The wait before a retry, cut short when `signal` aborts (a cancel, a takeover, the job's lock lost). */
export async function pause (ms: number, signal: AbortSignal): Promise<void> {
  try {
    await sleep(ms, undefined, { signal })
  } catch {
    throw new NodeError('Stopped while waiting to retry: the run was stopped')
  }
}

/**
 * One attempt of a node with an outside effect (or a wait), within `timeoutMs`: its signal
 * aborts at the limit, and the attempt counts as timed out then even if the node does not
 * stop (its late outcome is ignored).
 */
export async function timedAttempt (timeoutMs: number | undefined, signal: AbortSignal, execute: (signal: AbortSignal) => Promise<NodeResult>): Promise<NodeResult> {
  if (timeoutMs === undefined) return await execute(signal)
  const timeout = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new RetryableNodeError(`Timed out after ${timeoutMs}ms`)
      timeout.abort(error)
      reject(error)
    }, timeoutMs)
  })
  const running = execute(AbortSignal.any([signal, timeout.signal]))
  // Whichever loses the race settles unobserved.
  running.catch(() => {})
  timedOut.catch(() => {})
  try {
    return await Promise.race([running, timedOut])
  } catch (err) {
    // Aborted by its time limit: whatever the node made of the abort, it timed out.
    if (timeout.signal.aborted && !signal.aborted) throw timeout.signal.reason
    throw err
  } finally {
    clearTimeout(timer)
  }
}

/**
 * One attempt of a pure node: it is not interrupted (its work is bounded by the output and
 * pattern bounds, a code node's by its sandbox's), so its time limit is checked when it returns,
 * and an overrun discards its outcome. Its other failures are deterministic and never retried.
 */
export async function pureAttempt (timeoutMs: number | undefined, execute: (signal: AbortSignal) => Promise<NodeResult>): Promise<NodeResult> {
  const started = performance.now()
  const outcome = await execute(neverAborted)
  if (timeoutMs !== undefined && performance.now() - started > timeoutMs) throw new RetryableNodeError(`Timed out after ${timeoutMs}ms`)
  return outcome
}
