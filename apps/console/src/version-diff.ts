import type { LinkFieldsByType } from '@switchboard/core/engine/graph'
import type { WorkflowNode, WorkflowVersion } from './types.ts'
import { isRecord } from './records.ts'

/**
 * What changed between two versions of a workflow, field by field, for people to read (the builder's
 * Versions): the trigger, the nodes added and removed, and for each node kept its type, its links
 * and its config keys. Positions are left out: moving a node makes no version.
 */
export interface FieldChange {
  /** `type`, a link (`next`, a link field of the node's type: `then`, `branches`), or a config path (`values.total`). */
  field: string
  kind: 'type' | 'link' | 'config' | 'trigger'
  /** Undefined: the field is absent on that side. */
  before: unknown
  after: unknown
}

export interface NodeChange {
  id: string
  type: string
  change: 'added' | 'removed' | 'changed'
  /** For a changed node only. */
  fields: FieldChange[]
}

export interface VersionDiff {
  trigger: FieldChange[]
  nodes: NodeChange[]
  /** The builder edges a workflow may carry, as `source → target (handle)`. */
  edgesAdded: string[]
  edgesRemoved: string[]
}

type Compared = Pick<WorkflowVersion, 'triggerType' | 'triggerConfig' | 'nodes' | 'edges'>

const same = (one: unknown, other: unknown): boolean => JSON.stringify(one) === JSON.stringify(other)

/** How deep config objects are compared key by key; below that, a value changed is shown whole. */
const MAX_DEPTH = 4

/** The paths where two values differ: objects key by key, anything else (arrays included) as a whole. */
function changedPaths (before: unknown, after: unknown, path: string, depth: number): Array<{ path: string, before: unknown, after: unknown }> {
  if (same(before, after)) return []
  if (depth >= MAX_DEPTH || !isRecord(before) || !isRecord(after)) return [{ path, before, after }]
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])]
  return keys.flatMap((key) => changedPaths(before[key], after[key], path === '' ? key : `${path}.${key}`, depth + 1))
}

function nodeFields (before: WorkflowNode, after: WorkflowNode, linkFields: LinkFieldsByType): FieldChange[] {
  const fields: FieldChange[] = []
  if (before.type !== after.type) fields.push({ field: 'type', kind: 'type', before: before.type, after: after.type })
  if (before.next !== after.next) fields.push({ field: 'next', kind: 'link', before: before.next, after: after.next })
  const links = new Set((linkFields[after.type] ?? linkFields[before.type] ?? []).map((link) => link.field))
  for (const change of changedPaths(before.config ?? {}, after.config ?? {}, '', 0)) {
    const top = change.path.split('.')[0]!
    // A link field (a condition's `then`, a switch's `cases`) is a link however deep the change is.
    if (links.has(top)) fields.push({ field: change.path, kind: 'link', before: change.before, after: change.after })
    else fields.push({ field: change.path, kind: 'config', before: change.before, after: change.after })
  }
  return fields
}

const edgeText = (edge: unknown): string => {
  if (!isRecord(edge)) return JSON.stringify(edge)
  const handle = typeof edge.sourceHandle === 'string' ? ` (${edge.sourceHandle})` : ''
  return `${String(edge.source)} → ${String(edge.target)}${handle}`
}

/** `linkFields`: each node type's link fields (GET /api/automation/node-types), to tell links from config. */
export function diffVersions (before: Compared, after: Compared, linkFields: LinkFieldsByType): VersionDiff {
  const trigger: FieldChange[] = []
  if (before.triggerType !== after.triggerType) trigger.push({ field: 'triggerType', kind: 'trigger', before: before.triggerType, after: after.triggerType })
  for (const change of changedPaths(before.triggerConfig, after.triggerConfig, 'triggerConfig', 1)) {
    trigger.push({ field: change.path, kind: 'trigger', before: change.before, after: change.after })
  }

  const old = new Map(before.nodes.map((node) => [node.id, node]))
  const now = new Map(after.nodes.map((node) => [node.id, node]))
  const nodes: NodeChange[] = []
  for (const node of after.nodes) {
    const was = old.get(node.id)
    if (was === undefined) nodes.push({ id: node.id, type: node.type, change: 'added', fields: [] })
    else {
      const fields = nodeFields(was, node, linkFields)
      if (fields.length > 0) nodes.push({ id: node.id, type: node.type, change: 'changed', fields })
    }
  }
  for (const node of before.nodes) if (!now.has(node.id)) nodes.push({ id: node.id, type: node.type, change: 'removed', fields: [] })

  const edgesBefore = (Array.isArray(before.edges) ? before.edges : []).map(edgeText)
  const edgesAfter = (Array.isArray(after.edges) ? after.edges : []).map(edgeText)
  return {
    trigger,
    nodes,
    edgesAdded: edgesAfter.filter((edge) => !edgesBefore.includes(edge)),
    edgesRemoved: edgesBefore.filter((edge) => !edgesAfter.includes(edge))
  }
}

/** Whether two versions differ in anything the diff shows (they may differ in positions only). */
export const isEmptyDiff = (diff: VersionDiff): boolean =>
  diff.trigger.length === 0 && diff.nodes.length === 0 && diff.edgesAdded.length === 0 && diff.edgesRemoved.length === 0

/** A value in a line of text: JSON, cut at `max` characters. */
function shown (value: unknown, max = 60): string {
  const text = JSON.stringify(value) ?? String(value)
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`
}

/** A field change as a line: `link then: "a" → "b"`, `values.total set to 5`, `retry removed (was {…})`. */
export function describeChange (change: FieldChange): string {
  const field = change.kind === 'link' ? `link ${change.field}` : change.field
  if (change.before === undefined) return `${field} set to ${shown(change.after)}`
  if (change.after === undefined) return `${field} removed (was ${shown(change.before)})`
  return `${field}: ${shown(change.before)} → ${shown(change.after)}`
}
