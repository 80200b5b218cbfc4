import { and, eq, gt, isNull, sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { workflows } from '../db/schema/index.ts'

/**
 * "Listen for a test request" (README, The workflow builder): once armed, the next inbound webhook
 * of a WEBHOOK workflow within the window becomes its pinnedData, as the run's triggerData would
 * hold it but for the headers that carry the sender's secrets. The window is in the workflow's row,
 * which the webhook already reads (triggers/direct.ts): nothing more is asked while nobody listens.
 */

/** How long an armed capture listens. */
const TEST_CAPTURE_WINDOW_MS = 2 * 60_000

/** `idle`: never armed; `armed`: listening; `captured`: took a request; `expired`: the window passed without one. */
export type TestCaptureState = 'idle' | 'armed' | 'captured' | 'expired'

export interface TestCapture {
  state: TestCaptureState
  /** The end of the window (once captured, when the request came). */
  until: Date | null
  capturedAt: Date | null
}

/** An inbound webhook's triggerData (README, Runs). */
export interface WebhookTriggerData {
  body: unknown
  headers: Record<string, unknown>
  query: unknown
}

/** Headers a captured request loses: they carry the sender's credentials, which pinned data must never keep. */
const SECRET_HEADERS = ['authorization', 'cookie']

/** Computed by Postgres, on the clock the window was set by. */
export const testCaptureColumns = {
  state: sql<TestCaptureState>`case when ${workflows.testCapturedAt} is not null then 'captured'
    when ${workflows.testCaptureUntil} is null then 'idle'
    when ${workflows.testCaptureUntil} > now() then 'armed' else 'expired' end`,
  until: workflows.testCaptureUntil,
  capturedAt: workflows.testCapturedAt
}

/** Opens the window from now (a new one when already open), forgetting an earlier capture; updatedAt stays: nothing of the workflow changed. */
export const armTestCaptureValues = () => ({
  testCaptureUntil: sql`now() + make_interval(secs => ${TEST_CAPTURE_WINDOW_MS / 1000})`,
  testCapturedAt: null,
  updatedAt: sql`${workflows.updatedAt}`
})

/**
 * Takes an inbound webhook's triggerData as the workflow's pinnedData if it is listening; one
 * guarded statement, so that of two requests at once only one is taken. The window closes with
 * it, so that the webhook's next lookups see it closed and ask nothing more. Whether it was taken.
 */
export async function captureTestRequest (db: DbOrTx, workflowId: string, triggerData: WebhookTriggerData): Promise<boolean> {
  const headers = Object.fromEntries(Object.entries(triggerData.headers).filter(([name]) => !SECRET_HEADERS.includes(name)))
  const taken = await db.update(workflows)
    .set({ pinnedData: { ...triggerData, headers }, testCapturedAt: sql`now()`, testCaptureUntil: sql`now()` })
    .where(and(
      eq(workflows.id, workflowId),
      eq(workflows.triggerType, 'WEBHOOK'),
      isNull(workflows.testCapturedAt),
      gt(workflows.testCaptureUntil, sql`now()`)
    ))
    .returning({ id: workflows.id })
  return taken.length > 0
}
