/** Rejects with `TimeoutError` when `promise` has not settled within `ms`; the timer never outlives the race. */
export class TimeoutError extends Error {
  override name = 'TimeoutError'
}

export async function withTimeout<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => { reject(new TimeoutError(`${what}: no answer within ${ms} ms`)) }, ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}
