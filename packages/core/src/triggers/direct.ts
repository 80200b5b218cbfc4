import { and, eq } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { workflows, type TriggerType } from '../db/schema/index.ts'
import { isAdmin, type Viewer } from '../users/viewer.ts'

/** What /fire and the inbound webhook need to start a run: never the nodes, so the lookup does not grow with the workflow. */
interface TriggerTarget {
  id: string
  userId: string
  triggerType: TriggerType
  isActive: boolean
}

/** The workflow a run would start from; `viewer` scopes it to its owner (none: the public inbound webhook). */
export async function findTriggerTarget (db: DbOrTx, workflowId: string, viewer?: Viewer): Promise<TriggerTarget | null> {
  const [target] = await db.select({
    id: workflows.id,
    userId: workflows.userId,
    triggerType: workflows.triggerType,
    isActive: workflows.isActive
  }).from(workflows)
    .where(and(
      eq(workflows.id, workflowId),
      viewer === undefined || isAdmin(viewer) ? undefined : eq(workflows.userId, viewer.id)
    ))
    .limit(1)
  return target ?? null
}
