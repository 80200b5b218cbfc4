import type { WorkflowEdge, WorkflowNode } from '../db/schema/workflows.ts'
import type { NodeLinkField } from '../engine/nodes/definition.ts'

/**
 * Graph navigation (README, Graph execution). Links are a node's `next`, the
 * link fields of its type (a condition's `then`, `else`, `cases`, `default`) and the
 * visual builder's edges `{source, target, sourceHandle}`.
 */
export interface WorkflowGraph {
  nodes: WorkflowNode[]
  edges?: unknown
}

/** What a node chose when it ran: a node id, and the edge handles that stand for its branch. */
interface BranchChoice {
  next?: string | null
  handles?: string[]
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** The builder's edges as stored; anything that is not a `{source, target}` pair is ignored. */
function workflowEdges (edges: unknown): WorkflowEdge[] {
  if (!Array.isArray(edges)) return []
  return edges.filter((edge): edge is WorkflowEdge =>
    edge !== null && typeof edge === 'object' &&
    typeof (edge as WorkflowEdge).source === 'string' && typeof (edge as WorkflowEdge).target === 'string')
}

/**
 * The link fields of each node type (the definitions' `links` trait): the engine passes the
 * catalogue's, the console those `/api/automation/node-types` lists, so that this file stays free
 * of the executors.
 */
export type LinkFieldsByType = Readonly<Record<string, readonly NodeLinkField[]>>

/** One link leaving a node: `via` names where it is declared (`next`, `then`, `cases.gold`, `edges[2]`). */
interface NodeLink {
  via: string
  target: string
}

/**
 * The links leaving a node, in the order the engine follows them (README,
 * Graph execution): its type's link fields (a condition's branches), then `next`, then edges.
 * Non-string targets are skipped here; `validateWorkflowGraph` refuses them.
 * Validation checks these links and the engine follows them: one definition.
 */
export function outgoingLinks (node: WorkflowNode, edges: readonly WorkflowEdge[], linkFields: LinkFieldsByType): NodeLink[] {
  const links: NodeLink[] = []
  const config = node.config ?? {}
  for (const { field, kind } of linkFields[node.type] ?? []) {
    const value = config[field]
    if (kind === 'node' && typeof value === 'string') links.push({ via: field, target: value })
    if (kind === 'list' && Array.isArray(value)) {
      value.forEach((target, i) => { if (typeof target === 'string') links.push({ via: `${field}[${i}]`, target }) })
    }
    if (kind === 'map' && isRecord(value)) {
      for (const [key, target] of Object.entries(value)) {
        if (typeof target === 'string') links.push({ via: `${field}.${key}`, target })
      }
    }
  }
  if (typeof node.next === 'string') links.push({ via: 'next', target: node.next })
  edges.forEach((edge, i) => {
    if (edge.source === node.id) links.push({ via: `edges[${i}]`, target: edge.target })
  })
  return links
}

/**
 * The nodes reachable from `nodeId`, itself included, by every link; undefined when more than
 * `max` are, or a link leads to no node.
 */
export function reachableFrom (graph: WorkflowGraph, nodeId: string, linkFields: LinkFieldsByType, max: number): WorkflowNode[] | undefined {
  const byId = new Map(graph.nodes.map((node) => [node.id, node]))
  const edges = workflowEdges(graph.edges)
  const found = new Map<string, WorkflowNode>()
  const toVisit = [nodeId]
  while (toVisit.length > 0) {
    const id = toVisit.pop()!
    if (found.has(id)) continue
    const node = byId.get(id)
    if (node === undefined || found.size >= max) return undefined
    found.set(id, node)
    for (const link of outgoingLinks(node, edges, linkFields)) toVisit.push(link.target)
  }
  return [...found.values()]
}

/** Every node id some link points to. */
function linkTargets (graph: WorkflowGraph, linkFields: LinkFieldsByType): Set<string> {
  const targets = new Set<string>()
  for (const node of graph.nodes) {
    for (const link of outgoingLinks(node, [], linkFields)) if (link.target !== '') targets.add(link.target)
  }
  for (const edge of workflowEdges(graph.edges)) targets.add(edge.target)
  return targets
}

/** The first node, in array order, that no link points to. */
export function startNode (graph: WorkflowGraph, linkFields: LinkFieldsByType): WorkflowNode | undefined {
  const targets = linkTargets(graph, linkFields)
  return graph.nodes.find((node) => !targets.has(node.id))
}

/**
 * The id of the node after `node`, or null when the run ends there. Order: the
 * branch the node chose, its `next`, then its edges (when it chose a branch,
 * an edge whose `sourceHandle` stands for that branch, else an edge without a
 * handle, so that a condition never follows the other branch's edge). A
 * workflow without any link runs its nodes in array order.
 */
export function nextNodeId (graph: WorkflowGraph, node: WorkflowNode, linkFields: LinkFieldsByType, choice: BranchChoice = {}): string | null {
  if (typeof choice.next === 'string' && choice.next !== '') return choice.next
  if (typeof node.next === 'string' && node.next !== '') return node.next

  const edges = workflowEdges(graph.edges)
  const outgoing = edges.filter((edge) => edge.source === node.id)
  if (choice.handles !== undefined) {
    const handles = choice.handles
    const chosen = outgoing.find((edge) => typeof edge.sourceHandle === 'string' && handles.includes(edge.sourceHandle)) ??
      outgoing.find((edge) => edge.sourceHandle === undefined || edge.sourceHandle === null || edge.sourceHandle === '')
    if (chosen !== undefined) return chosen.target
  } else if (outgoing.length > 0) {
    return outgoing[0].target
  }

  if (linkTargets(graph, linkFields).size === 0 && edges.length === 0) {
    const index = graph.nodes.findIndex((candidate) => candidate.id === node.id)
    return graph.nodes[index + 1]?.id ?? null
  }
  return null
}

/** Which nodes start parallel branches and which join them (the definitions' `flow` trait). */
export type FlowOf = (node: WorkflowNode) => 'fork' | 'join' | undefined

/**
 * The join of a fork: the one join node its branches reach first, following every link, or why
 * there is none (engine/README.md, "Branches and joins"). A branch may also end before it; a fork
 * inside a branch is refused.
 */
export function joinOf (graph: WorkflowGraph, fork: WorkflowNode, linkFields: LinkFieldsByType, flowOf: FlowOf): { joinId: string } | { problem: string } {
  const nodesById = new Map(graph.nodes.map((node) => [node.id, node]))
  const edges = workflowEdges(graph.edges)
  const branches = outgoingLinks({ ...fork, next: undefined }, [], linkFields).map((link) => link.target)
  const joins = new Set<string>()
  for (const branch of branches) {
    const seen = new Set<string>()
    let reached = false
    const queue = [branch]
    for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
      const node = nodesById.get(id)
      if (node === undefined || seen.has(id)) continue
      seen.add(id)
      const flow = flowOf(node)
      if (flow === 'join') {
        joins.add(id)
        reached = true
        continue
      }
      if (flow === 'fork') return { problem: `branch ${branch} holds another parallel node (${id}); parallel branches do not nest` }
      queue.push(...outgoingLinks(node, edges, linkFields).map((link) => link.target))
    }
    if (!reached) return { problem: `branch ${branch} never reaches a merge node` }
  }
  if (joins.size > 1) return { problem: `its branches reach different merge nodes (${[...joins].join(', ')})` }
  return { joinId: [...joins][0]! }
}
