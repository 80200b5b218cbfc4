/**
 * Asks `url` (a process's `/health/live`) every `intervalMs` until `done` settles, and returns how
 * long each answer took: how long the process's event loop was held meanwhile (lock renewals and
 * other tenants' runs wait as long). A probe not answered 2xx within `timeoutMs` throws.
 */
export async function probeUntil (url: string, done: Promise<unknown>, { intervalMs = 50, timeoutMs = 10_000 } = {}): Promise<number[]> {
  const ending = { settled: false }
  done.then(() => { ending.settled = true }, () => { ending.settled = true })
  const durations: number[] = []
  while (!ending.settled) {
    const started = performance.now()
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
    await res.text()
    if (!res.ok) throw new Error(`${url} answered ${res.status}`)
    durations.push(performance.now() - started)
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
  return durations
}
