import { outgoingLinks, startNode, type LinkFieldsByType } from '@switchboard/core/engine/graph'
import type { Run, RunLog, WorkflowNode } from './types.ts'

/**
 * A workflow's graph laid out for drawing. The links are the engine's own (`outgoingLinks`
 * of packages/core: a condition's branches, `next`, the builder's edges) and so is the
 * start node; a workflow without any link runs in array order, drawn as dashed links.
 */
export interface GraphLink {
  from: string
  to: string
  /** The branch or handle the link stands for (`then`, `else`, a case value); empty for `next`. */
  label: string
  /** Array order, followed only because the workflow declares no link. */
  implicit: boolean
}

export interface PlacedNode {
  node: WorkflowNode
  x: number
  y: number
  isStart: boolean
}

export interface GraphLayout {
  nodes: PlacedNode[]
  links: GraphLink[]
  width: number
  height: number
}

export const NODE_WIDTH = 176
export const NODE_HEIGHT = 54
const COLUMN_GAP = 76
const ROW_GAP = 26
const PADDING = 14

interface Edge { source: string, target: string, sourceHandle?: string | null }

const edgesOf = (edges: unknown): Edge[] => Array.isArray(edges)
  ? edges.filter((edge): edge is Edge => typeof edge === 'object' && edge !== null &&
    typeof (edge as Edge).source === 'string' && typeof (edge as Edge).target === 'string')
  : []

function labelOf (via: string, edges: Edge[]): string {
  if (via === 'next') return ''
  // A map field's link (`cases.gold`) is labelled by its key.
  const dot = via.indexOf('.')
  if (dot !== -1) return via.slice(dot + 1)
  const edge = /^edges\[(\d+)\]$/.exec(via)
  if (edge !== null) return edges[Number(edge[1])]?.sourceHandle ?? ''
  return via
}

function linksOf (nodes: WorkflowNode[], rawEdges: unknown, linkFields: LinkFieldsByType): GraphLink[] {
  const edges = edgesOf(rawEdges)
  const ids = new Set(nodes.map((node) => node.id))
  const links = nodes.flatMap((node) => outgoingLinks(node, edges, linkFields)
    .filter((link) => ids.has(link.target))
    .map((link) => ({ from: node.id, to: link.target, label: labelOf(link.via, edges), implicit: false })))
  if (links.length > 0) return links
  return nodes.slice(1).map((node, i) => ({ from: nodes[i].id, to: node.id, label: '', implicit: true }))
}

/** Columns by the longest path from a node no link points to (Kahn's order); rows in array order. */
export function layoutGraph (nodes: WorkflowNode[], edges: unknown, linkFields: LinkFieldsByType): GraphLayout {
  const links = linksOf(nodes, edges, linkFields)
  const start = startNode({ nodes, edges }, linkFields)?.id
  const incoming = new Map(nodes.map((node) => [node.id, 0]))
  for (const link of links) incoming.set(link.to, (incoming.get(link.to) ?? 0) + 1)
  const column = new Map<string, number>()
  const queue = nodes.filter((node) => incoming.get(node.id) === 0).map((node) => node.id)
  for (const id of queue) column.set(id, 0)
  while (queue.length > 0) {
    const id = queue.shift() as string
    for (const link of links.filter((candidate) => candidate.from === id)) {
      column.set(link.to, Math.max(column.get(link.to) ?? 0, (column.get(id) ?? 0) + 1))
      const left = (incoming.get(link.to) ?? 0) - 1
      incoming.set(link.to, left)
      if (left === 0) queue.push(link.to)
    }
  }
  const rows = new Map<number, number>()
  const placed = nodes.map((node) => {
    // A node on a cycle (refused by validation; an old row could hold one) stays in the first column.
    const col = column.get(node.id) ?? 0
    const row = rows.get(col) ?? 0
    rows.set(col, row + 1)
    return { node, x: PADDING + col * (NODE_WIDTH + COLUMN_GAP), y: PADDING + row * (NODE_HEIGHT + ROW_GAP), isStart: node.id === start }
  })
  const columns = Math.max(1, ...[...rows.keys()].map((col) => col + 1))
  const height = Math.max(1, ...rows.values())
  return {
    nodes: placed,
    links,
    width: PADDING * 2 + columns * NODE_WIDTH + (columns - 1) * COLUMN_GAP,
    height: PADDING * 2 + height * NODE_HEIGHT + (height - 1) * ROW_GAP
  }
}

/** The nodes a run went through, in order: the node of each log line, first appearance. */
export function pathOf (logs: RunLog[]): string[] {
  const path: string[] = []
  for (const log of logs) if (log.nodeId !== null && !path.includes(log.nodeId)) path.push(log.nodeId)
  return path
}

/** How a node took part in a run: went through, failed there, or the run is there now. */
export type NodeState = 'done' | 'failed' | 'current'

/** Each node of the run's path with how it took part: an ERROR line marks a failure, the last node of an unfinished run is current. */
export function statesOf (run: Pick<Run, 'logs' | 'status'>, path: string[]): Map<string, NodeState> {
  const states = new Map<string, NodeState>(path.map((id) => [id, 'done']))
  for (const log of run.logs) if (log.nodeId !== null && log.level === 'ERROR') states.set(log.nodeId, 'failed')
  const last = path.at(-1)
  if (last !== undefined && (run.status === 'RUNNING' || run.status === 'WAITING')) states.set(last, 'current')
  return states
}

/** The engine's line for a node that failed: `Node <id> failed after <n>ms: <error>` (engine.ts). */
const FAILED_LINE = /^Node .+? failed after \d+ms: /

/**
 * A node's part in child runs of the same workflow: a parallel's branches run as child runs (engine
 * README, "Branches and joins"), so their nodes are on no path of the run itself.
 */
export interface InChildRuns {
  /** The child runs it ran in, with its state in each, in the children's order. */
  runs: Array<{ id: string, state: NodeState }>
  /** The first failure, with the child run it happened in. */
  error: { runId: string, message: string } | undefined
}

/** Each node that ran in one of `children` (child runs of the workflow shown, with their logs). */
export function inChildRunsOf (children: ReadonlyArray<Pick<Run, 'id' | 'logs' | 'status'>>): Map<string, InChildRuns> {
  const nodes = new Map<string, InChildRuns>()
  for (const child of children) {
    const errors = nodeErrorsOf(child.logs)
    for (const [nodeId, state] of statesOf(child, pathOf(child.logs))) {
      const node = nodes.get(nodeId) ?? { runs: [], error: undefined }
      nodes.set(nodeId, node)
      node.runs.push({ id: child.id, state })
      if (state === 'failed' && node.error === undefined) node.error = { runId: child.id, message: errors.get(nodeId) ?? 'failed' }
    }
  }
  return nodes
}

/** The state a node is drawn with for its child runs: failed in one of them, else running in one, else done. */
export function inChildRunsState ({ runs }: InChildRuns): NodeState {
  if (runs.some((run) => run.state === 'failed')) return 'failed'
  return runs.some((run) => run.state === 'current') ? 'current' : 'done'
}

/** `ran in 2 child runs`, `failed in 1 of 2 child runs`, `running in 1 of 3 child runs`. */
export function inChildRunsText (inChildRuns: InChildRuns): string {
  const { runs } = inChildRuns
  const noun = runs.length === 1 ? 'child run' : 'child runs'
  const state = inChildRunsState(inChildRuns)
  if (state === 'done') return `ran in ${runs.length} ${noun}`
  const count = runs.filter((run) => run.state === state).length
  return `${state === 'failed' ? 'failed' : 'running'} in ${count} of ${runs.length} ${noun}`
}

/** Each node with an ERROR line in the logs, and why it failed: its last such line, without the engine's prefix. */
export function nodeErrorsOf (logs: readonly RunLog[]): Map<string, string> {
  const errors = new Map<string, string>()
  for (const log of logs) if (log.nodeId !== null && log.level === 'ERROR') errors.set(log.nodeId, log.message.replace(FAILED_LINE, ''))
  return errors
}
