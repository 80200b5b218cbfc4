import type { Viewer } from '../users/viewer.ts'
import type { Db, DbOrTx } from '../db/client.ts'
import type { Workflow } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import {
  workflowsRepository,
  type DeletedWorkflow,
  type WorkflowChanges,
  type WorkflowDetail,
  type WorkflowInput
} from './repository.ts'
import { validateTriggerConfig, validateWorkflow, validateWorkflowGraph, type WorkflowLimits } from './validation.ts'

export const workflowNotFound = (): DomainError => new DomainError('WORKFLOW_NOT_FOUND', 'Workflow not found')

/**
 * The schedule side effects of CRON workflows (spec section 3). Both hooks run
 * inside the transaction that saved or deleted the workflow, so a failure
 * undoes the change; `onSaved` sees the workflow as stored.
 */
export interface ScheduleSync {
  onSaved: (workflow: Workflow, tx: DbOrTx) => Promise<void>
  onDeleted: (deleted: DeletedWorkflow, tx: DbOrTx) => Promise<void>
}

interface WorkflowServiceOptions {
  db: Db
  scheduleSync?: ScheduleSync
  /** @defaultValue the configuration's defaults */
  limits?: WorkflowLimits
}

const dedupe = (tags: string[] | undefined): string[] | undefined => tags === undefined ? undefined : [...new Set(tags)]

/** Create, update and delete of workflow definitions: validation, then the write, then the schedule hooks. */
export function createWorkflowService ({ db, scheduleSync, limits }: WorkflowServiceOptions) {
  const detail = async (viewer: Viewer, id: string): Promise<WorkflowDetail> => {
    const workflow = await workflowsRepository(db).findDetail(viewer, id)
    if (workflow === null) throw workflowNotFound()
    return workflow
  }

  return {
    async create (viewer: Viewer, input: WorkflowInput): Promise<WorkflowDetail> {
      validateWorkflow({ triggerType: input.triggerType, triggerConfig: input.triggerConfig ?? {}, nodes: input.nodes ?? [], edges: input.edges }, limits)
      const created = await db.transaction(async (tx) => {
        const workflow = await workflowsRepository(tx).create(viewer.id, { ...input, tags: dedupe(input.tags) })
        await scheduleSync?.onSaved(workflow, tx)
        return workflow
      })
      return detail(viewer, created.id)
    },

    /** Only the supplied fields change; the result is checked as a whole before it is stored. */
    async update (viewer: Viewer, id: string, changes: WorkflowChanges): Promise<WorkflowDetail> {
      await db.transaction(async (tx) => {
        const repo = workflowsRepository(tx)
        const current = await repo.findById(viewer, id, { forUpdate: true })
        if (current === null) throw workflowNotFound()
        const supplied = Object.keys(changes).filter((key) => changes[key as keyof WorkflowChanges] !== undefined)
        if (supplied.length === 0) return
        const merged = { ...current, ...changes }
        // Stored definitions were checked when saved: only what this change touches is checked again.
        if (changes.nodes !== undefined || changes.edges !== undefined) validateWorkflowGraph(merged.nodes, merged.edges, limits)
        if (changes.triggerType !== undefined || changes.triggerConfig !== undefined) validateTriggerConfig(merged.triggerType, merged.triggerConfig, limits)
        const saved = await repo.update(viewer, id, { ...changes, tags: dedupe(changes.tags) })
        await scheduleSync?.onSaved(saved!, tx)
      })
      return detail(viewer, id)
    },

    async delete (viewer: Viewer, id: string): Promise<void> {
      await db.transaction(async (tx) => {
        const deleted = await workflowsRepository(tx).delete(viewer, id)
        if (deleted === null) throw workflowNotFound()
        await scheduleSync?.onDeleted(deleted, tx)
      })
    }
  }
}
