import { outgoingLinks, type LinkFieldsByType } from '@switchboard/core/engine/graph'
import type { RenameTraits } from '@switchboard/core/workflows/rename-node'
import { layoutGraph } from './graph.ts'
import type { WorkflowNode } from './types.ts'
import { isRecord } from './records.ts'

/**
 * The builder's model (README, The workflow builder): what is drawn is the workflow's `nodes` and
 * `edges` exactly as the API stores them. A drawn link is a node's `next`, or one of its type's link
 * fields (a condition's `then`, a switch's `cases.<value>`, a parallel's `branches`), or one of the
 * builder edges a workflow may carry; connecting and disconnecting write those fields, nothing else.
 */
export interface Definition {
  nodes: WorkflowNode[]
  edges: unknown
}

/** Where links leave a node: `next`, a node field, a list field (each connection adds one), a map entry. */
export interface OutputHandle {
  id: string
  label: string
}

export interface DrawnLink {
  /** Stable while the link exists: its source and where it is declared (`next`, `then`, `branches[1]`). */
  id: string
  source: string
  target: string
  handle: string
  label: string
}

interface StoredEdge { source: string, target: string, sourceHandle?: string | null }

const edgesOf = (edges: unknown): StoredEdge[] => Array.isArray(edges)
  ? edges.filter((edge): edge is StoredEdge => typeof edge === 'object' && edge !== null &&
    typeof (edge as StoredEdge).source === 'string' && typeof (edge as StoredEdge).target === 'string')
  : []

/** The handles a node offers: its type's link fields, then `next`. */
export function handlesOf (node: WorkflowNode, linkFields: LinkFieldsByType): OutputHandle[] {
  const handles: OutputHandle[] = []
  for (const { field, kind } of linkFields[node.type] ?? []) {
    if (kind === 'map') {
      const map = node.config?.[field]
      if (isRecord(map)) for (const key of Object.keys(map)) handles.push({ id: `${field}.${key}`, label: key })
    } else {
      handles.push({ id: field, label: field })
    }
  }
  handles.push({ id: 'next', label: handles.length === 0 ? '' : 'next' })
  return handles
}

/** The handle a declared link leaves from: `branches[1]` → `branches`; a builder edge by its sourceHandle. */
function handleOf (via: string, edges: StoredEdge[]): string {
  const edge = /^edges\[(\d+)\]$/.exec(via)
  if (edge !== null) return edges[Number(edge[1])]?.sourceHandle ?? 'next'
  return via.replace(/\[\d+\]$/, '')
}

/** Every link the engine follows (packages/core's `outgoingLinks`), as the canvas draws it. */
export function drawnLinks (definition: Definition, linkFields: LinkFieldsByType): DrawnLink[] {
  const edges = edgesOf(definition.edges)
  const ids = new Set(definition.nodes.map((node) => node.id))
  return definition.nodes.flatMap((node) => outgoingLinks(node, edges, linkFields)
    .filter((link) => ids.has(link.target))
    .map((link) => {
      const handle = handleOf(link.via, edges)
      return { id: `${node.id}:${link.via}`, source: node.id, target: link.target, handle, label: handle === 'next' ? '' : handle.replace(/^\w+\./, '') }
    }))
}

function kindOf (node: WorkflowNode, field: string, linkFields: LinkFieldsByType) {
  return (linkFields[node.type] ?? []).find((link) => link.field === field)?.kind
}

/** The definition with a link from `source`'s `handle` to `target`, written where the API reads it. */
export function connect (definition: Definition, source: string, handle: string, target: string, linkFields: LinkFieldsByType): Definition {
  if (source === target) return definition
  const nodes = definition.nodes.map((node) => {
    if (node.id !== source) return node
    if (handle === 'next') return { ...node, next: target }
    const config = { ...(node.config ?? {}) }
    const dot = handle.indexOf('.')
    if (dot !== -1) {
      const field = handle.slice(0, dot)
      config[field] = { ...(isRecord(config[field]) ? config[field] : {}), [handle.slice(dot + 1)]: target }
    } else if (kindOf(node, handle, linkFields) === 'list') {
      const list = Array.isArray(config[handle]) ? config[handle] as unknown[] : []
      config[handle] = list.includes(target) ? list : [...list, target]
    } else {
      config[handle] = target
    }
    return { ...node, config }
  })
  return { ...definition, nodes }
}

/**
 * Where a node added after `node` is linked from: its first link field that names no node yet
 * (a condition's `then`, then `else`), a list field (a parallel's `branches` takes one more), or,
 * for a node without link fields, `next` while it is free. Undefined when every way out is taken.
 */
export function freeHandle (node: WorkflowNode, linkFields: LinkFieldsByType): string | undefined {
  const fields = linkFields[node.type] ?? []
  for (const { field, kind } of fields) {
    if (kind === 'list') return field
    if (kind === 'node' && node.config?.[field] === undefined) return field
  }
  return fields.length === 0 && node.next === undefined ? 'next' : undefined
}

/** The definition without the link `linkId` (a `drawnLinks` id): its field cleared, its list item or builder edge removed. */
export function disconnect (definition: Definition, linkId: string): Definition {
  const colon = linkId.indexOf(':')
  const source = linkId.slice(0, colon)
  const via = linkId.slice(colon + 1)
  const edge = /^edges\[(\d+)\]$/.exec(via)
  if (edge !== null) {
    const edges = edgesOf(definition.edges).filter((_, i) => i !== Number(edge[1]))
    return { ...definition, edges: edges.length === 0 ? null : edges }
  }
  const nodes = definition.nodes.map((node) => {
    if (node.id !== source) return node
    if (via === 'next') {
      const { next: _next, ...rest } = node
      return rest
    }
    const config = { ...(node.config ?? {}) }
    const item = /^(\w+)\[(\d+)\]$/.exec(via)
    const dot = via.indexOf('.')
    if (item !== null) {
      config[item[1]!] = (config[item[1]!] as unknown[]).filter((_, i) => i !== Number(item[2]))
    } else if (dot !== -1) {
      const field = via.slice(0, dot)
      const { [via.slice(dot + 1)]: _removed, ...rest } = config[field] as Record<string, unknown>
      config[field] = rest
    } else {
      delete config[via]
    }
    return { ...node, config }
  })
  return { ...definition, nodes }
}

/** A node's links to `removed` nodes cleared: what deleting them leaves of the others. */
function withoutLinksTo (node: WorkflowNode, removed: Set<string>, linkFields: LinkFieldsByType): WorkflowNode {
  let result: WorkflowNode = node
  if (result.next !== undefined && removed.has(result.next)) {
    const { next: _next, ...rest } = result
    result = rest
  }
  for (const { field, kind } of linkFields[node.type] ?? []) {
    const value = result.config?.[field]
    if (value === undefined) continue
    const config = { ...(result.config ?? {}) }
    if (kind === 'node' && typeof value === 'string' && removed.has(value)) delete config[field]
    else if (kind === 'list' && Array.isArray(value)) config[field] = value.filter((target) => !(typeof target === 'string' && removed.has(target)))
    else if (kind === 'map' && isRecord(value)) config[field] = Object.fromEntries(Object.entries(value).filter(([, target]) => !(typeof target === 'string' && removed.has(target))))
    else continue
    result = { ...result, config }
  }
  return result
}

/** The definition without the nodes `ids`, and without every link to them. */
export function removeNodes (definition: Definition, ids: readonly string[], linkFields: LinkFieldsByType): Definition {
  const removed = new Set(ids)
  const edges = edgesOf(definition.edges).filter((edge) => !removed.has(edge.source) && !removed.has(edge.target))
  return {
    nodes: definition.nodes.filter((node) => !removed.has(node.id)).map((node) => withoutLinksTo(node, removed, linkFields)),
    edges: definition.edges === null || definition.edges === undefined ? definition.edges : edges
  }
}

/** A node's config with the targets of its link fields passed through `rename`. */
function configLinksRenamed (node: WorkflowNode, rename: (target: unknown) => unknown, linkFields: LinkFieldsByType): Record<string, unknown> {
  const config = { ...(node.config ?? {}) }
  for (const { field, kind } of linkFields[node.type] ?? []) {
    const value = config[field]
    if (kind === 'node' && value !== undefined) config[field] = rename(value)
    if (kind === 'list' && Array.isArray(value)) config[field] = value.map(rename)
    if (kind === 'map' && isRecord(value)) config[field] = Object.fromEntries(Object.entries(value).map(([key, target]) => [key, rename(target)]))
  }
  return config
}

/** `base`, or `base-2`, `base-3`…: the first id none of `taken` has. */
export function freeId (base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base
  for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`
}

/**
 * Copied nodes pasted beside the originals: each gets a free id, links among them follow the new
 * ids, links to nodes that were not copied are dropped, and positions move by `offset`.
 */
export function pasteNodes (definition: Definition, copied: readonly WorkflowNode[], offset: { x: number, y: number }, linkFields: LinkFieldsByType): { definition: Definition, pasted: string[] } {
  const taken = new Set(definition.nodes.map((node) => node.id))
  const renamed = new Map<string, string>()
  for (const node of copied) {
    const id = freeId(node.id, taken)
    taken.add(id)
    renamed.set(node.id, id)
  }
  // The copies' new ids are all free, so every link still naming an existing node leads outside the copies.
  const existing = new Set(definition.nodes.map((node) => node.id))
  const rename = (target: unknown): unknown => typeof target === 'string' && renamed.has(target) ? renamed.get(target) : target
  const pasted = copied.map((node) => {
    const moved: WorkflowNode = {
      ...node,
      id: renamed.get(node.id)!,
      config: configLinksRenamed(node, rename, linkFields),
      ...(node.next !== undefined && { next: rename(node.next) as string }),
      position: { x: (node.position?.x ?? 0) + offset.x, y: (node.position?.y ?? 0) + offset.y }
    }
    return withoutLinksTo(moved, existing, linkFields)
  })
  return { definition: { ...definition, nodes: [...definition.nodes, ...pasted] }, pasted: pasted.map((node) => node.id) }
}

/** Positions for every node, laid out in columns by the links the engine follows (graph.ts). */
export function autoLayout (definition: Definition, linkFields: LinkFieldsByType): Definition {
  const layout = layoutGraph(definition.nodes, definition.edges, linkFields)
  const at = new Map(layout.nodes.map((placed) => [placed.node.id, { x: placed.x, y: placed.y }]))
  return { ...definition, nodes: definition.nodes.map((node) => ({ ...node, position: at.get(node.id) ?? { x: 0, y: 0 } })) }
}

/** The definition with positions for the nodes that have none (a workflow made through the API opens laid out). */
export function withPositions (definition: Definition, linkFields: LinkFieldsByType): Definition {
  if (definition.nodes.every((node) => node.position !== undefined)) return definition
  const laidOut = autoLayout(definition, linkFields)
  return { ...definition, nodes: definition.nodes.map((node, i) => node.position === undefined ? laidOut.nodes[i]! : node) }
}

/** Undo and redo over definitions: `push` records a change, at most `limit` steps back. */
export interface History {
  past: Definition[]
  future: Definition[]
}

const HISTORY_LIMIT = 100

export const pushHistory = (history: History, before: Definition): History =>
  ({ past: [...history.past.slice(-(HISTORY_LIMIT - 1)), before], future: [] })

/** A value a template may read, for the data picker: its path (`triggerData.body.total`) and its value in the sample. */
export interface SampleField {
  path: string
  value: unknown
  depth: number
}

/** The fields of `sample` (the trigger's data and node outputs, from a run or pinned data), depth first, at most four levels and `maxFields`. */
export function sampleFields (sample: Record<string, unknown>, maxFields = 200): SampleField[] {
  const fields: SampleField[] = []
  const walk = (value: unknown, path: string, depth: number): void => {
    if (fields.length >= maxFields) return
    fields.push({ path, value, depth })
    if (depth >= 4 || !isRecord(value)) return
    for (const [key, child] of Object.entries(value)) if (/^[A-Za-z_][\w-]*$/.test(key)) walk(child, `${path}.${key}`, depth + 1)
  }
  for (const [key, value] of Object.entries(sample)) if (/^[A-Za-z_][\w-]*$/.test(key)) walk(value, key, 1)
  return fields
}

/** The nodes a link path leads from to `nodeId`: the ones whose output it may read. */
export function upstreamOf (definition: Definition, nodeId: string, linkFields: LinkFieldsByType): Set<string> {
  const into = new Map<string, string[]>()
  for (const link of drawnLinks(definition, linkFields)) into.set(link.target, [...into.get(link.target) ?? [], link.source])
  const upstream = new Set<string>()
  const queue = [nodeId]
  for (let id = queue.pop(); id !== undefined; id = queue.pop()) {
    for (const source of into.get(id) ?? []) {
      if (upstream.has(source) || source === nodeId) continue
      upstream.add(source)
      queue.push(source)
    }
  }
  return upstream
}

/**
 * Each node type's traits as core's `renameNode` reads them, from `GET /api/automation/node-types`:
 * the builder renames with the function the api's rename route uses, so both rewrite the same references.
 */
export function renameTraitsOf (nodeTypes: ReadonlyArray<{ type: string, traits: RenameTraits }>): (type: string) => RenameTraits | undefined {
  const byType = new Map(nodeTypes.map((nodeType) => [nodeType.type, nodeType.traits]))
  return (type) => byType.get(type)
}
