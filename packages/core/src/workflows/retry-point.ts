import type { WorkflowNode } from '../db/schema/workflows.ts'
import { CREDENTIAL_MARKER } from '../credentials/redaction.ts'
import { DomainError } from '../errors.ts'
import { flowOf, NODE_LINK_FIELDS } from '../engine/nodes/index.ts'
import { joinOf, outgoingLinks, withImplicitForks, type WorkflowGraph } from '../engine/graph.ts'
import type { EdgeRule } from '../db/schema/workflow-versions.ts'

/** The builder's edges as stored, for `outgoingLinks`. */
const edgesOf = (graph: WorkflowGraph) => Array.isArray(graph.edges) ? graph.edges as Parameters<typeof outgoingLinks>[1] : []

/** Every node reachable from `from` (itself included), following every link. */
function reachableFrom (graph: WorkflowGraph, from: string): Set<string> {
  const nodesById = new Map(graph.nodes.map((node) => [node.id, node]))
  const edges = edgesOf(graph)
  const seen = new Set<string>()
  const queue = [from]
  for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
    const node = nodesById.get(id)
    if (node === undefined || seen.has(id)) continue
    seen.add(id)
    queue.push(...outgoingLinks(node, edges, NODE_LINK_FIELDS).map((link) => link.target))
  }
  return seen
}

/**
 * The nodes inside a fork's branches, up to their merge (to their end without one), each with the
 * fork: they run as child runs, never from the parent.
 */
function branchNodes (graph: WorkflowGraph): Map<string, string> {
  const inside = new Map<string, string>()
  for (const fork of graph.nodes.filter((node: WorkflowNode) => flowOf(node) === 'fork')) {
    const join = joinOf(graph, fork, NODE_LINK_FIELDS, flowOf)
    if (!('joinId' in join)) continue
    const afterJoin = join.joinId === undefined ? new Set<string>() : reachableFrom(graph, join.joinId)
    for (const branch of outgoingLinks({ ...fork, next: undefined }, [], NODE_LINK_FIELDS)) {
      for (const id of reachableFrom(graph, branch.target)) if (!afterJoin.has(id) && !inside.has(id)) inside.set(id, fork.id)
    }
  }
  return inside
}

const refused = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)

/**
 * Where a retry from `fromNodeId` starts (README, The workflow builder): at that node of
 * `definition`, its edges read by its version's edge rule (graph.ts, `withImplicitForks`; `all`,
 * new versions' rule, when not given), with the outputs the first run's nodes before it produced
 * (`result` minus that node and every node reachable from it). Refused (400) for a node the graph
 * lacks, a node inside a parallel branch, and when an output kept holds a masked credential
 * value: the retried nodes would read `[credential]` where the value was.
 */
export function retryStartPoint (definition: WorkflowGraph & { edgeRule?: EdgeRule }, result: Record<string, unknown>, fromNodeId: string): { nodeId: string, result: Record<string, unknown> } {
  const graph = withImplicitForks(definition, definition.edgeRule ?? 'all')
  if (!definition.nodes.some((node) => node.id === fromNodeId)) throw refused(`fromNodeId names no node of the workflow: ${fromNodeId}`)
  const fork = branchNodes(graph).get(fromNodeId)
  if (fork !== undefined) {
    const source = graph.implicitForks?.get(fork)
    throw refused(`Node ${fromNodeId} is inside a parallel branch: retry from ${source === undefined ? 'the parallel node' : `${source}, whose edges start the branches`}`)
  }
  const after = reachableFrom(graph, fromNodeId)
  const kept = Object.fromEntries(Object.entries(result).filter(([id]) => !after.has(id)))
  const masked = Object.entries(kept).find(([, output]) => JSON.stringify(output ?? null).includes(CREDENTIAL_MARKER))
  if (masked !== undefined) {
    throw refused(`Cannot retry from ${fromNodeId}: the output of ${masked[0]} holds a masked credential value; retry the whole run`)
  }
  return { nodeId: fromNodeId, result: kept }
}
