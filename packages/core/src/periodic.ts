import type { Logger } from './logger.ts'

export interface PeriodicPass {
  /** A first pass after `firstDelayMs`, then one every `intervalMs` after the previous ends. */
  start: () => void
  /**
   * A pass now (after the current one, if one is running) instead of at its time; the
   * interval counts again from its end. Calls while one is already due add nothing.
   */
  runSoon: () => void
  /** No pass starts after this; resolves once a pass in progress has ended. */
  stop: () => Promise<void>
}

/**
 * Runs `pass` again and again, never two at once: the reconciler and retention loops.
 * A failed pass is logged with `failureMessage` and the next one still comes.
 */
export function periodicPass (pass: () => Promise<unknown>, options: { intervalMs: number, firstDelayMs: number, logger: Logger, failureMessage: string }): PeriodicPass {
  const { intervalMs, firstDelayMs, logger, failureMessage } = options
  let timer: NodeJS.Timeout | undefined
  let running: Promise<unknown> | undefined
  let stopped = true
  let soon = false

  function schedule (delayMs: number): void {
    clearTimeout(timer)
    timer = setTimeout(() => {
      soon = false
      running = pass()
        .catch((err: unknown) => { logger.warn({ err }, failureMessage) })
        .finally(() => {
          running = undefined
          if (!stopped) schedule(soon ? 0 : intervalMs)
        })
    }, delayMs)
    timer.unref()
  }

  return {
    start (): void {
      if (!stopped) return
      stopped = false
      schedule(firstDelayMs)
    },
    runSoon (): void {
      if (stopped || soon) return
      soon = true
      // A running pass schedules the next one when it ends.
      if (running === undefined) schedule(0)
    },
    async stop (): Promise<void> {
      stopped = true
      clearTimeout(timer)
      await running
    }
  }
}
