/** Polls until `check` returns a value other than undefined, or fails after the deadline. */
export async function waitFor<T> (check: () => Promise<T | undefined>, { timeoutMs = 15_000, intervalMs = 50, what = 'condition' } = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}
