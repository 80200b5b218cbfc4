/** Rejects with `TimeoutError` when `promise` has not settled within `ms`; the timer never outlives the race. */
export class TimeoutError extends Error {
  override name = 'TimeoutError'
}

export async function withTimeout<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => { reject(new TimeoutError(`${what}: no answer within ${ms} ms`)) }, Math.max(0, ms))
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The moment by which a request must be answered, shared by every step of it: each step
 * gets what is left, less what the steps after it need (`reserveMs`), so the answer is
 * never later than the deadline however the time was spent.
 */
export class Deadline {
  /** Milliseconds since the epoch. */
  readonly at: number

  constructor (at: number) {
    this.at = at
  }

  static after (ms: number, since = Date.now()): Deadline {
    return new Deadline(since + ms)
  }

  /** Milliseconds left before the deadline, less `reserveMs`; negative once passed. */
  remainingMs (reserveMs = 0): number {
    return this.at - reserveMs - Date.now()
  }

  /** Throws `TimeoutError` when less than `reserveMs` is left: nothing more may start. */
  check (what: string, reserveMs = 0): void {
    if (this.remainingMs(reserveMs) <= 0) throw new TimeoutError(`${what}: the request's deadline has passed`)
  }

  /** `promise`, or `TimeoutError` once only `reserveMs` is left before the deadline. */
  async race<T> (promise: Promise<T>, what: string, reserveMs = 0): Promise<T> {
    return await withTimeout(promise, this.remainingMs(reserveMs), what)
  }
}
