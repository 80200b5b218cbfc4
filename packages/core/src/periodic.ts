import type { Logger } from './logger.ts'

export interface PeriodicPass {
  /** A first pass after `firstDelayMs`, then one every `intervalMs` after the previous ends. */
  start: () => void
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

  function schedule (delayMs: number): void {
    timer = setTimeout(() => {
      running = pass()
        .catch((err: unknown) => { logger.warn({ err }, failureMessage) })
        .finally(() => { if (!stopped) schedule(intervalMs) })
    }, delayMs)
    timer.unref()
  }

  return {
    start (): void {
      if (!stopped) return
      stopped = false
      schedule(firstDelayMs)
    },
    async stop (): Promise<void> {
      stopped = true
      clearTimeout(timer)
      await running
    }
  }
}
