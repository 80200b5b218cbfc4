import type { EdgeRule } from '../db/schema/workflow-versions.ts'
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
  /** The forks `withImplicitForks` added, each by its id: the node whose edges it runs. */
  implicitForks?: ReadonlyMap<string, string>
}

/**
 * How deep forks nest (engine/README.md, "Branches and joins"): a fork (a `parallel`, or a node
 * whose edges run every target) inside a branch of another is level 2, and so on. Each level's
 * branches are child runs one level deeper, within SUBWORKFLOW_MAX_DEPTH (default 10).
 */
export const FORK_MAX_NESTING = 3

/** What a node chose when it ran: a node id, and the edge handles that stand for its branch. */
interface BranchChoice {
  next?: string | null
  handles?: string[]
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** An edge that stands for no branch of its source: without a sourceHandle. */
const isPlain = (edge: WorkflowEdge): boolean => edge.sourceHandle === undefined || edge.sourceHandle === null || edge.sourceHandle === ''

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
      outgoing.find(isPlain)
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

/** The node type an implicit fork runs as: the parallel machinery, not a second one. */
const IMPLICIT_FORK_TYPE = 'parallel'

/**
 * The graph a version runs (engine/README.md, "Branches and joins"): under the edge rule `all`, a
 * node without a `next` whose edges without a sourceHandle lead to several nodes forks, each
 * target a branch, through a `parallel` node added after it (an id none of the nodes has, the
 * same for the same definition, so that every execution of a version sees the same graph).
 * Under `first` (versions stored before that rule) the graph is as stored: its first edge is followed.
 */
export function withImplicitForks (graph: WorkflowGraph, edgeRule: EdgeRule): WorkflowGraph {
  if (edgeRule === 'first') return graph
  const edges = workflowEdges(graph.edges)
  const taken = new Set(graph.nodes.map((node) => node.id))
  const forks: WorkflowNode[] = []
  const forkOf = new Map<string, string>()
  // Each node's plain targets, in one pass: a run reads its graph through here.
  const plainTargets = new Map<string, Set<string>>()
  for (const edge of edges) {
    if (isPlain(edge)) plainTargets.set(edge.source, (plainTargets.get(edge.source) ?? new Set()).add(edge.target))
  }
  for (const node of graph.nodes) {
    // `next` is followed before edges: a node with one never reaches them.
    if (typeof node.next === 'string' && node.next !== '') continue
    const targets = [...(plainTargets.get(node.id) ?? [])]
    if (targets.length < 2) continue
    let id = `${node.id}:fork`
    for (let n = 2; taken.has(id); n++) id = `${node.id}:fork-${n}`
    taken.add(id)
    forks.push({ id, type: IMPLICIT_FORK_TYPE, config: { branches: targets } })
    forkOf.set(node.id, id)
  }
  if (forks.length === 0) return graph
  const rewired: WorkflowEdge[] = []
  const forked = new Set<string>()
  for (const edge of edges) {
    const fork = forkOf.get(edge.source)
    if (fork === undefined || !isPlain(edge)) rewired.push(edge)
    else if (!forked.has(edge.source)) {
      forked.add(edge.source)
      rewired.push({ source: edge.source, target: fork })
    }
  }
  return {
    nodes: [...graph.nodes, ...forks],
    edges: rewired,
    implicitForks: new Map([...forkOf].map(([source, fork]) => [fork, source]))
  }
}

/** What a fork's branches meet at: a join node, or none (an implicit fork whose branches end on their own); or why the graph is refused, at which node. */
export type JoinFound = { joinId: string | undefined } | { problem: string, at: string }

/**
 * The join of a fork: the one join node its branches reach first, following every link, or why
 * there is none (engine/README.md, "Branches and joins"). A branch may also end before it. A fork
 * inside a branch is passed over to its own join, up to FORK_MAX_NESTING levels. An implicit fork
 * (`withImplicitForks`) may have no join, when none of its branches reaches one.
 */
export function joinOf (graph: WorkflowGraph, fork: WorkflowNode, linkFields: LinkFieldsByType, flowOf: FlowOf): JoinFound {
  const nodesById = new Map(graph.nodes.map((node) => [node.id, node]))
  const edges = workflowEdges(graph.edges)
  const targetsOf = (node: WorkflowNode): string[] => outgoingLinks(node, edges, linkFields).map((link) => link.target)

  const joinAt = (fork: WorkflowNode, level: number): JoinFound => {
    const branches = outgoingLinks({ ...fork, next: undefined }, [], linkFields).map((link) => link.target)
    const joins = new Set<string>()
    const unreached: string[] = []
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
        if (flow === 'fork') {
          if (level >= FORK_MAX_NESTING) return { problem: `branches nest deeper than ${FORK_MAX_NESTING} levels (a parallel node, or a node whose edges run several targets, inside a branch of another, at most ${FORK_MAX_NESTING} deep)`, at: id }
          // The inner fork's branches are its own child runs: this branch goes on after its join.
          const inner = joinAt(node, level + 1)
          if ('problem' in inner) return inner
          if (inner.joinId !== undefined) queue.push(...targetsOf(nodesById.get(inner.joinId)!))
          continue
        }
        queue.push(...targetsOf(node))
      }
      if (!reached) unreached.push(branch)
    }
    const implicit = graph.implicitForks?.has(fork.id) === true
    if (implicit && unreached.length === branches.length) return { joinId: undefined }
    if (unreached.length > 0) {
      const problem = implicit
        ? `branch ${unreached[0]} never reaches merge ${[...joins][0]}, which its other branches reach: a node's edges without a sourceHandle run every target, and the branches meet at one merge or none`
        : `branch ${unreached[0]} never reaches a merge node`
      return { problem, at: fork.id }
    }
    if (joins.size > 1) return { problem: `its branches reach different merge nodes (${[...joins].join(', ')})`, at: fork.id }
    return { joinId: [...joins][0]! }
  }
  return joinAt(fork, 1)
}
