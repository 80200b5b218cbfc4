import { and, desc, eq } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { workflowVersions, type Workflow, type WorkflowVersion } from '../db/schema/index.ts'
import type { EdgeRule } from '../db/schema/workflow-versions.ts'

/** A version as the list shows it: who made it and when, without the definition. */
export type WorkflowVersionSummary = Pick<WorkflowVersion, 'version' | 'triggerType' | 'createdBy' | 'restoredFrom' | 'createdAt'>

const summaryColumns = {
  version: workflowVersions.version,
  triggerType: workflowVersions.triggerType,
  createdBy: workflowVersions.createdBy,
  restoredFrom: workflowVersions.restoredFrom,
  createdAt: workflowVersions.createdAt
}

/**
 * The immutable definitions of workflows (workflow_versions). Reads take a workflow id the
 * caller has already found in the viewer's scope: the versions of a workflow are as visible
 * as the workflow.
 */
export function workflowVersionsRepository (db: DbOrTx) {
  return {
    /** Records the definition `workflow` holds now as its `workflow.version`, its edges read by `edgeRule`. */
    async record (workflow: Workflow, createdBy: string, { restoredFrom, edgeRule = 'all' }: { restoredFrom?: number, edgeRule?: EdgeRule } = {}): Promise<void> {
      const { id, version, triggerType, triggerConfig, nodes, edges } = workflow
      await db.insert(workflowVersions).values({ workflowId: id, version, triggerType, triggerConfig, nodes, edges, createdBy, restoredFrom, edgeRule })
    },

    /** The edge rule of the workflow's version `version` (`all` when it has no row). */
    async edgeRuleOf (workflowId: string, version: number): Promise<EdgeRule> {
      const [found] = await db.select({ edgeRule: workflowVersions.edgeRule }).from(workflowVersions)
        .where(and(eq(workflowVersions.workflowId, workflowId), eq(workflowVersions.version, version))).limit(1)
      return found?.edgeRule ?? 'all'
    },

    /** Newest first. */
    async list (workflowId: string, page: { limit: number, offset: number }): Promise<WorkflowVersionSummary[]> {
      return db.select(summaryColumns).from(workflowVersions)
        .where(eq(workflowVersions.workflowId, workflowId))
        .orderBy(desc(workflowVersions.version))
        .limit(page.limit).offset(page.offset)
    },

    async find (workflowId: string, version: number): Promise<WorkflowVersion | null> {
      const [found] = await db.select().from(workflowVersions)
        .where(and(eq(workflowVersions.workflowId, workflowId), eq(workflowVersions.version, version))).limit(1)
      return found ?? null
    }
  }
}
