import { layoutGraph, NODE_HEIGHT, NODE_WIDTH, type GraphLink, type NodeState } from '../graph.ts'
import { linkFieldsOf, useNodeTypes } from '../hooks.ts'
import type { WorkflowNode } from '../types.ts'
import { ErrorNotice, Loading } from './ui.tsx'

interface GraphViewProps {
  nodes: WorkflowNode[]
  edges: unknown
  /** The nodes a run went through, in order: drawn highlighted, with the links between them. */
  path?: string[]
  states?: Map<string, NodeState>
}

const clip = (text: string, max: number): string => text.length <= max ? text : `${text.slice(0, max - 1)}…`

function linkPath (from: { x: number, y: number }, to: { x: number, y: number }): string {
  const x1 = from.x + NODE_WIDTH
  const y1 = from.y + NODE_HEIGHT / 2
  const x2 = to.x
  const y2 = to.y + NODE_HEIGHT / 2
  const bend = Math.max(30, Math.abs(x2 - x1) / 2)
  return `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`
}

/** The workflow's nodes and links as the engine follows them (graph.ts), in SVG. */
export function GraphView ({ nodes, edges, path = [], states = new Map() }: GraphViewProps) {
  const nodeTypes = useNodeTypes()
  if (nodes.length === 0) return <p class='muted'>This workflow has no nodes.</p>
  // The node types say which config fields are links (a condition's branches): without them the graph would miss those.
  if (nodeTypes.data === undefined) return nodeTypes.error === undefined ? <Loading what='the graph' /> : <ErrorNotice error={nodeTypes.error} />
  const layout = layoutGraph(nodes, edges, linkFieldsOf(nodeTypes.data))
  const at = new Map(layout.nodes.map((placed) => [placed.node.id, placed]))
  const taken = (link: GraphLink): boolean => {
    const i = path.indexOf(link.from)
    return i >= 0 && path[i + 1] === link.to
  }
  const description = layout.links.length === 0
    ? `${nodes.length} node`
    : layout.links.map((link) => `${link.from} to ${link.to}${link.label === '' ? '' : ` (${link.label})`}`).join('; ')
  return (
    <div class='graph-scroll' tabIndex={0} role='region' aria-label='Workflow graph (scrolls)'>
      <svg class='graph' width={layout.width} height={layout.height} viewBox={`0 0 ${layout.width} ${layout.height}`} role='img' aria-label={`Workflow graph: ${description}${path.length > 0 ? `. Path taken: ${path.join(', ')}` : ''}`}>
        <defs>
          <marker id='arrow' viewBox='0 0 10 10' refX='9' refY='5' markerUnits='userSpaceOnUse' markerWidth='10' markerHeight='10' orient='auto-start-reverse'>
            <path d='M0,0 L10,5 L0,10 z' class='arrow' />
          </marker>
          <marker id='arrow-taken' viewBox='0 0 10 10' refX='9' refY='5' markerUnits='userSpaceOnUse' markerWidth='10' markerHeight='10' orient='auto-start-reverse'>
            <path d='M0,0 L10,5 L0,10 z' class='arrow taken' />
          </marker>
        </defs>
        {layout.links.map((link, i) => {
          const from = at.get(link.from)
          const to = at.get(link.to)
          if (from === undefined || to === undefined) return null
          const isTaken = taken(link)
          const d = linkPath(from, to)
          return (
            <g key={`${link.from}-${link.to}-${i}`} class={`link${isTaken ? ' taken' : ''}${link.implicit ? ' implicit' : ''}`} data-link={`${link.from}->${link.to}`}>
              <path d={d} marker-end={`url(#${isTaken ? 'arrow-taken' : 'arrow'})`} />
              {link.label !== '' && (
                <text x={(from.x + NODE_WIDTH + to.x) / 2} y={(from.y + to.y) / 2 + NODE_HEIGHT / 2 - 6} text-anchor='middle' class='link-label'>{clip(link.label, 16)}</text>
              )}
            </g>
          )
        })}
        {layout.nodes.map(({ node, x, y, isStart }) => {
          const state = states.get(node.id) ?? (path.includes(node.id) ? 'done' : undefined)
          return (
            <g key={node.id} class={`node${state === undefined ? '' : ` node-${state}`}${isStart ? ' start' : ''}`} transform={`translate(${x},${y})`} data-node={node.id}>
              <title>{`${node.id} (${node.type})${isStart ? ', start' : ''}${state === undefined ? '' : `, ${state}`}`}</title>
              <rect width={NODE_WIDTH} height={NODE_HEIGHT} rx='8' />
              <text x='12' y='22' class='node-id'>{clip(node.id, 20)}</text>
              <text x='12' y='40' class='node-type'>{clip(node.type, 24)}{isStart ? ' · start' : ''}</text>
            </g>
          )
        })}
      </svg>
    </div>
  )
}
