import { isDeepStrictEqual } from 'node:util'
import { recordAudit, type AuditAction, type AuditContext } from '../audit/log.ts'
import { isLimitedToWorkflows, mayUseWorkflow, type Viewer } from '../users/viewer.ts'
import type { Db, DbOrTx } from '../db/client.ts'
import type { Workflow, WorkflowNode, WorkflowVersion } from '../db/schema/index.ts'
import type { EdgeRule } from '../db/schema/workflow-versions.ts'
import { agentToolWorkflows } from '../engine/agents.ts'
import type { NodeSaveTools } from '../engine/nodes/definition.ts'
import { nodeDefinition } from '../engine/nodes/index.ts'
import { DomainError, forbidden } from '../errors.ts'
import { checkSavedQuotas, type Quotas, type SavedQuota } from '../users/quotas.ts'
import { credentialsRepository } from '../credentials/repository.ts'
import { checkCredentialOwnerOnly, checkWorkflowCredentials, recordWorkflowCredentials } from '../credentials/workflow-usage.ts'
import {
  workflowsRepository,
  type DeletedWorkflow,
  type WorkflowChanges,
  type WorkflowDetail,
  type WorkflowInput
} from './repository.ts'
import { listensToOf } from './listens-to.ts'
import { renameNode } from './rename-node.ts'
import { captureTestRequest, type TestCapture, type WebhookTriggerData } from './test-capture.ts'
import { exportWorkflow, valuesToFill, type WorkflowExport } from './transfer.ts'
import { validateCancelOn, validateFlowControl, validateNodesAsync, validateRunTags, validateTriggerConfig, validateWorkflow, validateWorkflowGraph, type WorkflowLimits } from './validation.ts'
import { workflowVersionsRepository, type WorkflowVersionSummary } from './versions.ts'

/** `details`: where a definition names the workflow, when that is what was not found. */
export const workflowNotFound = (details?: { nodeId: string, field: string }): DomainError => new DomainError('WORKFLOW_NOT_FOUND', 'Workflow not found', details)
export const versionNotFound = (): DomainError => new DomainError('WORKFLOW_VERSION_NOT_FOUND', 'Workflow version not found')

/**
 * The schedule side effects of CRON workflows (README, Triggers). Both hooks run
 * inside the transaction that saved or deleted the workflow, so a failure
 * undoes the change; `onSaved` sees the workflow as stored.
 */
export interface ScheduleSync {
  onSaved: (workflow: Workflow, tx: DbOrTx) => Promise<void>
  onDeleted: (deleted: DeletedWorkflow, tx: DbOrTx) => Promise<void>
}

interface WorkflowServiceOptions {
  db: Db
  /** What checks nodes off the event loop: a code sandbox of the process's own (README, Code). */
  tools: NodeSaveTools
  scheduleSync?: ScheduleSync
  /** @defaultValue the configuration's defaults */
  limits?: WorkflowLimits
  /** Every owner's quotas unless an admin set others (users/quotas.ts). @defaultValue none checked */
  quotas?: Quotas
}

/** The quotas a workflow in this state counts against beside `workflows`: active CRON and EVENT workflows. */
const countedAs = (workflow: Pick<Workflow, 'isActive' | 'triggerType'>): SavedQuota[] =>
  !workflow.isActive ? [] : workflow.triggerType === 'CRON' ? ['cronWorkflows'] : workflow.triggerType === 'EVENT' ? ['eventListeners'] : []

/** The fields a version holds: changing any of them makes a new version. */
const DEFINITION_FIELDS = ['triggerType', 'triggerConfig', 'nodes', 'edges'] as const

/** A field as a version (and the audit log) compares it: nodes without their builder positions (README, The workflow builder: Positions). */
function withoutPositions (field: string, value: unknown): unknown {
  if (field !== 'nodes' || !Array.isArray(value)) return value
  return (value as WorkflowNode[]).map(({ position: _position, ...node }) => node)
}

const dedupe = (tags: string[] | undefined): string[] | undefined => tags === undefined ? undefined : [...new Set(tags)]

/**
 * A viewer limited to workflows (an API key's workflowIds, README API keys) saves only nodes that
 * call workflows of its list, by their id: any other (another of the owner's, a missing one, a
 * template, which could name any) is a workflow it cannot see, answered as one (404).
 */
function checkCalledWorkflows (viewer: Viewer, nodes: readonly WorkflowNode[]): void {
  for (const node of nodes) {
    const field = nodeDefinition(node.type)?.traits.callsWorkflow
    if (field === undefined) continue
    const called = node.config?.[field]
    if (typeof called !== 'string' || !mayUseWorkflow(viewer, called)) throw workflowNotFound({ nodeId: node.id, field })
  }
}

/**
 * The workflows a node calls as tools (its `toolWorkflows` field: ai_agent's `tools`) are AGENT
 * workflows of the workflow's owner (README, AI agents); a viewer limited to workflows names only
 * those of its list, any other answered as a workflow it cannot see (404).
 */
async function checkToolWorkflows (tx: DbOrTx, viewer: Viewer, ownerId: string, nodes: readonly WorkflowNode[]): Promise<void> {
  const named = nodes.flatMap((node) => {
    const field = nodeDefinition(node.type)?.traits.toolWorkflows
    const ids = field === undefined ? undefined : node.config?.[field]
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string').map((id) => ({ node, field: field!, id })) : []
  })
  if (named.length === 0) return
  const hidden = named.find(({ id }) => !mayUseWorkflow(viewer, id))
  if (hidden !== undefined) throw workflowNotFound({ nodeId: hidden.node.id, field: hidden.field })
  const found = new Set((await agentToolWorkflows(tx, ownerId, [...new Set(named.map(({ id }) => id))])).map(({ id }) => id))
  const missing = named.find(({ id }) => !found.has(id))
  if (missing !== undefined) throw new DomainError('VALIDATION_ERROR', `Node ${missing.node.id}: config.${missing.field} names no AGENT workflow of the owner: ${missing.id}`)
}

/**
 * Why `errorWorkflowId` cannot be the error workflow of workflow `workflowId` (absent: one being
 * created) of `ownerId` (README, Error workflows), or undefined when it can: it names another
 * non-CRON workflow of the same owner. Another owner's workflow, or one a viewer limited to
 * workflows cannot use, is answered as a missing one. Locks it against a delete (repository).
 */
async function errorWorkflowProblem (tx: DbOrTx, viewer: Viewer, ownerId: string, errorWorkflowId: string, workflowId?: string): Promise<string | undefined> {
  if (errorWorkflowId === workflowId) return 'errorWorkflowId must name another workflow than this one'
  const target = mayUseWorkflow(viewer, errorWorkflowId) ? await workflowsRepository(tx).errorWorkflowTarget(ownerId, errorWorkflowId) : null
  if (target === null) return `errorWorkflowId names no workflow of the owner: ${errorWorkflowId}`
  if (target.triggerType === 'CRON') return `errorWorkflowId cannot name a CRON workflow: ${errorWorkflowId}`
  return undefined
}

async function checkErrorWorkflow (tx: DbOrTx, viewer: Viewer, ownerId: string, errorWorkflowId: string | null | undefined, workflowId?: string): Promise<void> {
  if (errorWorkflowId === undefined || errorWorkflowId === null) return
  const problem = await errorWorkflowProblem(tx, viewer, ownerId, errorWorkflowId, workflowId)
  if (problem !== undefined) throw new DomainError('VALIDATION_ERROR', problem)
}

/**
 * What the audit log records of a change (README, Audit log): an activation or deactivation
 * when isActive turns, else an update when any field took another value; null for a change
 * that changed nothing, or only where the builder draws nodes.
 */
function auditedChange (current: Workflow, changes: WorkflowChanges): { action: AuditAction, fields: string[] } | null {
  const fields = Object.entries(changes)
    .filter(([field, value]) => value !== undefined && !isDeepStrictEqual(withoutPositions(field, value), withoutPositions(field, current[field as keyof Workflow])))
    .map(([field]) => field)
  if (changes.isActive !== undefined && changes.isActive !== current.isActive) {
    return { action: changes.isActive ? 'workflow.activated' : 'workflow.deactivated', fields }
  }
  return fields.length > 0 ? { action: 'workflow.updated', fields } : null
}

/**
 * Create, update, restore, import and delete of workflow definitions: validation (graph,
 * trigger, then credential references), the write with its version, then the schedule hooks,
 * in one transaction.
 */
export function createWorkflowService ({ db, tools, scheduleSync, limits, quotas }: WorkflowServiceOptions) {
  /** Refuses a save that takes its owner past a quota (400, the transaction rolled back), before any schedule is touched. */
  const checkQuotas = async (tx: DbOrTx, ownerId: string, added: SavedQuota[]): Promise<void> => {
    if (quotas !== undefined) await checkSavedQuotas(tx, ownerId, quotas, added)
  }

  const detail = async (viewer: Viewer, id: string): Promise<WorkflowDetail> => {
    const workflow = await workflowsRepository(db).findDetail(viewer, id)
    if (workflow === null) throw workflowNotFound()
    return workflow
  }

  /** `audit`: who creates it, recorded in its transaction as `action`. */
  async function create (viewer: Viewer, input: WorkflowInput, audit?: AuditContext, action: AuditAction = 'workflow.created'): Promise<WorkflowDetail> {
    // A key limited to workflows could not see what it made: it makes none (README, API keys).
    if (isLimitedToWorkflows(viewer)) throw forbidden()
    const nodes = input.nodes ?? []
    validateWorkflow({ triggerType: input.triggerType, triggerConfig: input.triggerConfig ?? {}, nodes, edges: input.edges }, limits)
    validateRunTags(input.runTags)
    validateFlowControl(input.flowControl)
    validateCancelOn(input.cancelOn)
    await validateNodesAsync(nodes, tools)
    const created = await db.transaction(async (tx) => {
      const credentialIds = await checkWorkflowCredentials(tx, viewer.id, nodes)
      await checkToolWorkflows(tx, viewer, viewer.id, nodes)
      await checkErrorWorkflow(tx, viewer, viewer.id, input.errorWorkflowId)
      const workflow = await workflowsRepository(tx).create(viewer.id, { ...input, tags: dedupe(input.tags) })
      await checkQuotas(tx, viewer.id, ['workflows', ...countedAs(workflow)])
      await workflowVersionsRepository(tx).record(workflow, viewer.id)
      await recordWorkflowCredentials(tx, workflow.id, credentialIds)
      await scheduleSync?.onSaved(workflow, tx)
      if (audit !== undefined) await recordAudit(tx, audit, { action, targetType: 'workflow', targetId: workflow.id, details: { name: workflow.name, isActive: workflow.isActive } })
      return workflow
    })
    return detail(viewer, created.id)
  }

  /**
   * Writes `changes` to the workflow locked in `tx`. A change of the definition (a field of
   * DEFINITION_FIELDS given a different value), or a restore, stores a new version made by the viewer.
   * Its edge rule (engine/README.md, "Branches and joins"): a restore's is the restored version's,
   * a change of nodes or edges gets `all` (and is checked under it), a change of the trigger alone
   * keeps the current version's, so that no stored graph starts following its edges otherwise.
   */
  async function save (tx: DbOrTx, viewer: Viewer, current: Workflow, changes: WorkflowChanges, restored?: { version: number, edgeRule: EdgeRule }): Promise<void> {
    const merged = { ...current, ...changes }
    const graphChanged = changes.nodes !== undefined || changes.edges !== undefined
    // Stored definitions were checked when saved: only what this change touches is checked again.
    if (graphChanged) {
      validateWorkflowGraph(merged.nodes, merged.edges, limits, restored?.edgeRule)
      // Rewired edges could reach a call that was never reached: the graph is checked whole.
      checkCalledWorkflows(viewer, merged.nodes)
    }
    if (changes.triggerType !== undefined || changes.triggerConfig !== undefined) validateTriggerConfig(merged.triggerType, merged.triggerConfig, limits)
    validateRunTags(changes.runTags)
    validateFlowControl(changes.flowControl)
    validateCancelOn(changes.cancelOn)
    if (changes.nodes !== undefined) {
      checkCredentialOwnerOnly(viewer.id, current.userId, current.nodes, merged.nodes)
      await checkToolWorkflows(tx, viewer, current.userId, merged.nodes)
    }
    await checkErrorWorkflow(tx, viewer, current.userId, changes.errorWorkflowId, current.id)
    const credentialIds = changes.nodes === undefined ? undefined : await checkWorkflowCredentials(tx, current.userId, merged.nodes)
    const redefined = restored !== undefined ||
      DEFINITION_FIELDS.some((field) => changes[field] !== undefined && !isDeepStrictEqual(withoutPositions(field, changes[field]), withoutPositions(field, current[field])))
    const versions = workflowVersionsRepository(tx)
    const edgeRule = restored?.edgeRule ?? (graphChanged || !redefined ? 'all' : await versions.edgeRuleOf(current.id, current.version))
    const repo = workflowsRepository(tx)
    const listensTo = changes.nodes !== undefined || changes.cancelOn !== undefined ? listensToOf(merged.nodes, merged.cancelOn) : undefined
    const saved = (await repo.update(viewer, current.id, { ...changes, tags: dedupe(changes.tags) }, redefined ? current.version + 1 : undefined, listensTo))!
    const before = countedAs(current)
    await checkQuotas(tx, current.userId, countedAs(saved).filter((name) => !before.includes(name)))
    if (redefined) await versions.record(saved, viewer.id, { restoredFrom: restored?.version, edgeRule })
    if (credentialIds !== undefined) await recordWorkflowCredentials(tx, current.id, credentialIds)
    await scheduleSync?.onSaved(saved, tx)
  }

  const locked = async (tx: DbOrTx, viewer: Viewer, id: string): Promise<Workflow> => {
    const current = await workflowsRepository(tx).findById(viewer, id, { forUpdate: true })
    if (current === null) throw workflowNotFound()
    return current
  }

  return {
    create,

    /**
     * Only the supplied fields change; the result is checked as a whole before it is stored.
     * `audit`: who changes it, recorded in its transaction (auditedChange).
     */
    async update (viewer: Viewer, id: string, changes: WorkflowChanges, audit?: AuditContext): Promise<WorkflowDetail> {
      // Before the transaction: compiling code must not hold a connection and the workflow's lock.
      if (changes.nodes !== undefined) await validateNodesAsync(changes.nodes, tools)
      await db.transaction(async (tx) => {
        const current = await locked(tx, viewer, id)
        const supplied = Object.keys(changes).filter((key) => changes[key as keyof WorkflowChanges] !== undefined)
        if (supplied.length === 0) return
        await save(tx, viewer, current, changes)
        const change = auditedChange(current, { ...changes, tags: dedupe(changes.tags) })
        if (audit !== undefined && change !== null) {
          await recordAudit(tx, audit, { action: change.action, targetType: 'workflow', targetId: id, details: { name: changes.name ?? current.name, fields: change.fields } })
        }
      })
      return detail(viewer, id)
    },

    /**
     * Renames node `from` to `to` with every reference to it (rename-node.ts), saved as an update
     * is: checked, a new version, the audit log's `workflow.updated` naming the references rewritten. Mentions inside code are not
     * rewritten: the rename is refused (409, listing them) unless `force`. The code itself is
     * unchanged, so it is not compiled again.
     */
    async renameNode (viewer: Viewer, id: string, rename: { from: string, to: string, force?: boolean }, audit?: AuditContext): Promise<WorkflowDetail> {
      await db.transaction(async (tx) => {
        const current = await locked(tx, viewer, id)
        const renamed = renameNode(current, rename.from, rename.to, (type) => nodeDefinition(type)?.traits)
        if (renamed.unrewritable.length > 0 && rename.force !== true) {
          throw new DomainError('NODE_REFERENCES_UNREWRITABLE', `References to ${rename.from} inside code cannot be rewritten: change the code, or rename with force`, { references: renamed.unrewritable })
        }
        const changes = { nodes: renamed.nodes, edges: renamed.edges }
        await save(tx, viewer, current, changes)
        const change = auditedChange(current, changes)
        if (audit !== undefined && change !== null) {
          await recordAudit(tx, audit, { action: change.action, targetType: 'workflow', targetId: id, details: { name: current.name, fields: change.fields, renamedNode: { from: rename.from, to: rename.to, references: renamed.rewritten } } })
        }
      })
      return detail(viewer, id)
    },

    /** Listens for the workflow's next inbound webhook (test-capture.ts); 400 for a workflow of another trigger. */
    async armTestCapture (viewer: Viewer, id: string): Promise<TestCapture> {
      const repository = workflowsRepository(db)
      const armed = await repository.armTestCapture(viewer, id)
      if (armed !== null) return armed
      const workflow = await repository.findById(viewer, id)
      if (workflow === null) throw workflowNotFound()
      throw new DomainError('VALIDATION_ERROR', `Only a WEBHOOK workflow listens for a test request; this one's trigger is ${workflow.triggerType}`)
    },

    /** Where the workflow's test capture stands, with what it captured once it has. */
    async testCapture (viewer: Viewer, id: string): Promise<TestCapture & { pinnedData?: unknown }> {
      const found = await workflowsRepository(db).findTestCapture(viewer, id)
      if (found === null) throw workflowNotFound()
      const { pinnedData, ...capture } = found
      return capture.state === 'captured' ? { ...capture, pinnedData } : capture
    },

    /** The public webhook's capture of a request, when the workflow listens (test-capture.ts). */
    captureTestRequest: async (workflowId: string, triggerData: WebhookTriggerData): Promise<boolean> =>
      captureTestRequest(db, workflowId, triggerData),

    /**
     * Makes version `version` current again, as a new version: checked like a change, since
     * limits or credentials may have changed since it was stored; its code was compiled when it
     * was saved, and is not again.
     */
    async restore (viewer: Viewer, id: string, version: number, audit?: AuditContext): Promise<WorkflowDetail> {
      await db.transaction(async (tx) => {
        const current = await locked(tx, viewer, id)
        const restored = await workflowVersionsRepository(tx).find(id, version)
        if (restored === null) throw versionNotFound()
        const { triggerType, triggerConfig, nodes, edges, edgeRule } = restored
        await save(tx, viewer, current, { triggerType, triggerConfig, nodes, edges }, { version, edgeRule })
        if (audit !== undefined) {
          await recordAudit(tx, audit, { action: 'workflow.restored', targetType: 'workflow', targetId: id, details: { name: current.name, version, newVersion: current.version + 1 } })
        }
      })
      return detail(viewer, id)
    },

    /** The workflow's versions, newest first. */
    async versions (viewer: Viewer, id: string, page: { limit: number, offset: number }): Promise<WorkflowVersionSummary[]> {
      if (!await workflowsRepository(db).isVisible(viewer, id)) throw workflowNotFound()
      return workflowVersionsRepository(db).list(id, page)
    },

    async version (viewer: Viewer, id: string, version: number): Promise<WorkflowVersion> {
      if (!await workflowsRepository(db).isVisible(viewer, id)) throw workflowNotFound()
      const found = await workflowVersionsRepository(db).find(id, version)
      if (found === null) throw versionNotFound()
      return found
    },

    /** A portable copy of the workflow (transfer.ts). */
    async export (viewer: Viewer, id: string): Promise<WorkflowExport> {
      const workflow = await workflowsRepository(db).findById(viewer, id)
      if (workflow === null) throw workflowNotFound()
      const used = await credentialsRepository(db).usedBy(workflow.id)
      return exportWorkflow(workflow, new Map(used.map(({ id: credentialId, name, type }) => [credentialId, { name, type }])))
    },

    /**
     * A new workflow from an export's definition, checked like a create and inactive whatever it
     * says; `toFill`: the places of the export's `redacted` its nodes still leave without a value,
     * and `errorWorkflowId` when the one exported names no workflow the importer may name (an
     * export from another account): it is left out rather than refusing the import.
     */
    async import (viewer: Viewer, definition: Omit<WorkflowInput, 'isActive'>, redacted: readonly string[], audit?: AuditContext): Promise<WorkflowDetail & { toFill: string[] }> {
      const { errorWorkflowId } = definition
      const errorWorkflowLost = errorWorkflowId !== undefined && errorWorkflowId !== null && await errorWorkflowProblem(db, viewer, viewer.id, errorWorkflowId) !== undefined
      const workflow = await create(viewer, { ...definition, isActive: false, ...(errorWorkflowLost && { errorWorkflowId: null }) }, audit, 'workflow.imported')
      return { ...workflow, toFill: [...valuesToFill(workflow.nodes, redacted), ...(errorWorkflowLost ? ['errorWorkflowId'] : [])] }
    },

    async delete (viewer: Viewer, id: string, audit?: AuditContext): Promise<void> {
      await db.transaction(async (tx) => {
        const deleted = await workflowsRepository(tx).delete(viewer, id)
        if (deleted === null) throw workflowNotFound()
        // A plain column, no foreign key: the workflows naming it as their error workflow are told here (README, Error workflows).
        await workflowsRepository(tx).forgetErrorWorkflow(deleted.userId, deleted.id)
        await scheduleSync?.onDeleted(deleted, tx)
        if (audit !== undefined) await recordAudit(tx, audit, { action: 'workflow.deleted', targetType: 'workflow', targetId: id, details: { name: deleted.name } })
      })
    }
  }
}

export type WorkflowService = ReturnType<typeof createWorkflowService>
