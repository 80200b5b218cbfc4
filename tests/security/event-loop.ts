interface ProbedAnswer {
  status: number
  text: string
  /** The slowest /health/live answer while the request was being handled. */
  slowestProbeMs: number
}

/**
 * Sends a request to the api and, until it is answered, asks `/health/live` every 50 ms
 * (at least once). Throws as soon as a health request goes unanswered for `limitMs`: the
 * api's event loop is blocked, and every other client of the process waits with it.
 */
export async function sendWhileProbing (baseUrl: string, path: string, init: RequestInit, limitMs = 2_000): Promise<ProbedAnswer> {
  let answered = false
  const answer = fetch(`${baseUrl}${path}`, { ...init, signal: AbortSignal.timeout(60_000) })
    .then(async (res) => ({ status: res.status, text: await res.text() }))
    .finally(() => { answered = true })
  let slowestProbeMs = 0
  try {
    for (;;) {
      const started = performance.now()
      await (await fetch(`${baseUrl}/health/live`, { signal: AbortSignal.timeout(limitMs) })).text()
      slowestProbeMs = Math.max(slowestProbeMs, performance.now() - started)
      if (answered) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  } catch (err) {
    answer.catch(() => {})
    throw new Error(`/health/live gave no answer within ${limitMs} ms while POST ${path} was handled`, { cause: err })
  }
  return { ...(await answer), slowestProbeMs }
}
