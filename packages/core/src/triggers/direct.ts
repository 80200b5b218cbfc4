import DataLoader from 'dataloader'
import { eq, inArray } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { users, workflows, type CancelOn, type FlowControl, type TriggerType, type WebhookRateLimit } from '../db/schema/index.ts'
import { isAdmin, mayUseWorkflow, type Viewer } from '../users/viewer.ts'

/** What /fire and the inbound webhook need to start a run: never the nodes, so the lookup does not grow with the workflow. */
interface TriggerTarget {
  id: string
  userId: string
  triggerType: TriggerType
  isActive: boolean
  /** The inbound webhook's rate limit, read by the same lookup so that a workflow without one costs nothing more. */
  webhookRateLimit: WebhookRateLimit | null
  /** Until when the inbound webhook's next request becomes the workflow's pinnedData (workflows/test-capture.ts), read by the same lookup. */
  testCaptureUntil: Date | null
  /** The quotas an admin set for the owner (users/quotas.ts: the start quota reads them). */
  ownerQuotas: unknown
  /** The template of its runs' tags (runs/tags.ts). */
  runTags: string | null
  /** Its per-key limits (runs/flow-control.ts). */
  flowControl: FlowControl | null
  /** The events that cancel its runs (runs/cancel-on.ts). */
  cancelOn: CancelOn[] | null
}

/** Most ids one lookup statement asks for. */
const MAX_IDS_PER_LOOKUP = 500

export interface TriggerTargets {
  /** The workflow a run would start from; `viewer` scopes it to its owner (none: the public inbound webhook). */
  find: (workflowId: string, viewer?: Viewer) => Promise<TriggerTarget | null>
}

/**
 * The lookups of the requests that arrive in one turn of the event loop share one statement
 * (`id in (…)`): under load, one round trip for many fires and webhooks instead of one each.
 * Nothing is cached, so a lookup never sees a workflow older than its own statement (a PATCH
 * that deactivated it and answered is seen by every later request).
 */
export function createTriggerTargets (db: DbOrTx): TriggerTargets {
  const loader = new DataLoader<string, TriggerTarget | null>(async (ids) => {
    const rows = await db.select({
      id: workflows.id,
      userId: workflows.userId,
      triggerType: workflows.triggerType,
      isActive: workflows.isActive,
      webhookRateLimit: workflows.webhookRateLimit,
      testCaptureUntil: workflows.testCaptureUntil,
      ownerQuotas: users.quotas,
      runTags: workflows.runTags,
      flowControl: workflows.flowControl,
      cancelOn: workflows.cancelOn
    }).from(workflows).innerJoin(users, eq(users.id, workflows.userId)).where(inArray(workflows.id, [...ids]))
    const byId = new Map(rows.map((row) => [row.id, row]))
    return ids.map((id) => byId.get(id) ?? null)
  }, {
    cache: false,
    maxBatchSize: MAX_IDS_PER_LOOKUP,
    // Every request parsed in this turn, not only the microtasks of the current one.
    batchScheduleFn: (dispatch) => { setImmediate(dispatch) }
  })
  return {
    find: async (workflowId, viewer) => {
      const target = await loader.load(workflowId)
      return target !== null && (viewer === undefined || ((isAdmin(viewer) || target.userId === viewer.id) && mayUseWorkflow(viewer, workflowId))) ? target : null
    }
  }
}
