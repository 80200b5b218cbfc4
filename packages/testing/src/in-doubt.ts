/**
 * The request ids of the api's "in doubt" log lines (runs/group-start.ts): requests answered with
 * an error after their run's COMMIT was sent, whose runs may exist and will run (README, Guarantees).
 * `logText` is the api's output, one JSON line per entry.
 */
export function requestsInDoubt (logText: string): Set<string> {
  const ids = new Set<string>()
  for (const line of logText.split('\n')) {
    if (!line.includes('whose runs may exist')) continue
    try {
      const entry = JSON.parse(line) as { requests?: Array<{ requestId: string | null }> }
      for (const { requestId } of entry.requests ?? []) if (requestId !== null) ids.add(requestId)
    } catch {}
  }
  return ids
}
