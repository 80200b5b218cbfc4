import type { WorkflowEdge, WorkflowNode } from '../db/schema/workflows.ts'

/**
 * Graph navigation (contract, "Graph execution"). Links are a node's `next`, a
 * condition's branch targets (`then`, `else`, `cases`, `default`) and the
 * visual builder's edges `{source, target, sourceHandle}`.
 */
export interface WorkflowGraph {
  nodes: WorkflowNode[]
  edges?: unknown
}

/** What a node chose when it ran: a node id, and the edge handles that stand for its branch. */
export interface BranchChoice {
  next?: string | null
  handles?: string[]
}

/** The builder's edges; anything that is not a `{source, target}` pair is ignored. */
export function workflowEdges (edges: unknown): WorkflowEdge[] {
  if (!Array.isArray(edges)) return []
  return edges.filter((edge): edge is WorkflowEdge =>
    edge !== null && typeof edge === 'object' &&
    typeof (edge as WorkflowEdge).source === 'string' && typeof (edge as WorkflowEdge).target === 'string')
}

/** The node ids a condition node's config may branch to. */
export function branchTargets (node: WorkflowNode): string[] {
  if (node.type !== 'condition' || node.config === undefined) return []
  const { then, else: otherwise, cases, default: fallback } = node.config
  const targets = [then, otherwise, fallback]
  if (cases !== null && typeof cases === 'object') targets.push(...Object.values(cases))
  return targets.filter((target): target is string => typeof target === 'string' && target !== '')
}

/** Every node id some link points to. */
export function linkTargets (graph: WorkflowGraph): Set<string> {
  const targets = new Set<string>()
  for (const node of graph.nodes) {
    if (typeof node.next === 'string' && node.next !== '') targets.add(node.next)
    for (const target of branchTargets(node)) targets.add(target)
  }
  for (const edge of workflowEdges(graph.edges)) targets.add(edge.target)
  return targets
}

/** The first node, in array order, that no link points to. */
export function startNode (graph: WorkflowGraph): WorkflowNode | undefined {
  const targets = linkTargets(graph)
  return graph.nodes.find((node) => !targets.has(node.id))
}

/**
 * The id of the node after `node`, or null when the run ends there. Order: the
 * branch the node chose, its `next`, then its edges (when it chose a branch,
 * an edge whose `sourceHandle` stands for that branch, else an edge without a
 * handle, so that a condition never follows the other branch's edge). A
 * workflow without any link runs its nodes in array order.
 */
export function nextNodeId (graph: WorkflowGraph, node: WorkflowNode, choice: BranchChoice = {}): string | null {
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

  if (linkTargets(graph).size === 0 && edges.length === 0) {
    const index = graph.nodes.findIndex((candidate) => candidate.id === node.id)
    return graph.nodes[index + 1]?.id ?? null
  }
  return null
}
