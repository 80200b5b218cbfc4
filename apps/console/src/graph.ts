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
