import { sql, type SQL, type SQLWrapper } from 'drizzle-orm'
import type { UserRole } from '../db/schema/index.ts'
import { textArray } from '../db/sql.ts'

/**
 * Who is asking, for every owner-scoped read and write: members see and change
 * their own workflows and runs, admins everyone's (README, Ownership). A request made
 * with an API key limited to some workflows sees only those, and their runs (README, API keys).
 */
export interface Viewer {
  id: string
  role: UserRole
  /** The only workflows this viewer may see; absent or null: no limit beyond ownership. */
  workflowIds?: readonly string[] | null
}

/** The viewer of an authenticated request, from its token's claims or its API key. */
export const viewerOf = (claims: { sub: string, role: UserRole, workflowIds?: readonly string[] | null }): Viewer =>
  ({ id: claims.sub, role: claims.role, workflowIds: claims.workflowIds ?? null })

export const isAdmin = (viewer: Viewer): boolean => viewer.role === 'admin'

/** Whether the viewer is limited to some workflows (an API key's workflowIds). */
export const isLimitedToWorkflows = (viewer: Viewer): viewer is Viewer & { workflowIds: readonly string[] } =>
  viewer.workflowIds !== undefined && viewer.workflowIds !== null

/** The viewer's limit as a condition on a workflow id column (`true` when there is none). */
export const workflowLimit = (viewer: Viewer, workflowId: SQLWrapper): SQL =>
  isLimitedToWorkflows(viewer) ? sql`${workflowId} = any(${textArray(viewer.workflowIds)})` : sql`true`

/** Whether the viewer's limit (an API key's workflowIds) admits this workflow. */
export const mayUseWorkflow = (viewer: Viewer, workflowId: string): boolean =>
  !isLimitedToWorkflows(viewer) || viewer.workflowIds.includes(workflowId)
