import { memo } from 'preact/compat'
import { useMemo, useRef } from 'preact/hooks'
import {
  Background, Controls, Handle, MarkerType, Position, ReactFlow, useReactFlow,
  type Connection, type Edge, type Node, type NodeChange, type NodeProps
} from '@xyflow/react'
import { startNode, withImplicitForks, type LinkFieldsByType } from '@switchboard/core/engine/graph'
import { drawnLinks, handlesOf, type Definition, type OutputHandle } from '../../builder.ts'
import { firstLine } from '../../format.ts'
import { inChildRunsState, inChildRunsText, type InChildRuns, type NodeState } from '../../graph.ts'
import type { WorkflowNode } from '../../types.ts'

interface StepData extends Record<string, unknown> {
  node: WorkflowNode
  handles: OutputHandle[]
  state: NodeState | 'test' | undefined
  /** Where the API's last refusal pointed. */
  flagged: boolean
  /** Why it failed in the run shown, or in a child run. */
  error: string | undefined
  /** The child runs of the run shown it ran in (a parallel's branch), when not in the run itself. */
  inChildRuns: InChildRuns | undefined
  /** Its edges without a handle lead to several nodes: a save makes them run every target at once (README, Graph execution). */
  runsAll: boolean
}
type StepNode = Node<StepData, 'step'>

interface TriggerData extends Record<string, unknown> {
  kind: string
  detail: string | undefined
}
type TriggerNode = Node<TriggerData, 'trigger'>

/** The trigger's node on the canvas: no workflow node has this id (ids are letters, digits, `_` and `-`). */
export const TRIGGER_NODE_ID = ':trigger'
/** How far left of the first node the trigger is drawn: it has no position of its own. */
const TRIGGER_OFFSET_X = 260

const STATE_TEXT: Record<NonNullable<StepData['state']>, string> = { done: 'ran', failed: 'failed', current: 'running', test: 'ran in the test' }

/**
 * One workflow node on the canvas: its id and type, its run state (or its child runs') with the first line
 * of its error, an input and one output per link it may make.
 */
const StepView = memo(function StepView ({ data, selected }: NodeProps<StepNode>) {
  const { node, handles, state, flagged, error, inChildRuns, runsAll } = data
  const shown = state ?? (inChildRuns === undefined ? undefined : inChildRunsState(inChildRuns))
  return (
    <div
      class={`flow-node${selected ? ' selected' : ''}${shown === undefined ? '' : ` state-${shown}`}${flagged ? ' flagged' : ''}`}
      // Room for every output and its label.
      style={{ minHeight: `${Math.max(3.2, handles.length * 1.4)}rem` }} data-node={node.id}
    >
      <Handle type='target' position={Position.Left} aria-label={`Link into ${node.id}`} />
      <strong class='flow-node-id'>{node.id}</strong>
      <span class='flow-node-type'>{node.type}</span>
      {runsAll && <span class='badge fan-out' title='Its edges run every target at once, as parallel branches (versions saved before this rule follow the first)'>runs all</span>}
      {shown !== undefined && <span class={`badge ${shown === 'failed' ? 'danger' : 'ok'}`}>{state !== undefined ? STATE_TEXT[state] : inChildRunsText(inChildRuns!)}</span>}
      {error !== undefined && <span class='flow-node-error' title={error}>{firstLine(error, 60)}</span>}
      {handles.map((handle, i) => (
        <Handle
          key={handle.id} type='source' id={handle.id} position={Position.Right}
          style={{ top: `${Math.round((i + 1) * 100 / (handles.length + 1))}%` }}
          aria-label={`${node.id}: ${handle.label === '' ? 'next' : handle.label}`} data-handle={handle.id}
        >
          {handle.label !== '' && <span class='handle-label'>{handle.label}</span>}
        </Handle>
      ))}
    </div>
  )
})

/** The workflow's trigger, drawn before the node it starts (a view of the workflow's trigger fields, never a node of it). */
const TriggerView = memo(function TriggerView ({ data, selected }: NodeProps<TriggerNode>) {
  return (
    <div class={`flow-node flow-trigger${selected ? ' selected' : ''}`}>
      <strong class='flow-node-id'>Trigger</strong>
      <span class='flow-node-type'>{data.kind}</span>
      {data.detail !== undefined && <span class='flow-trigger-detail'>{data.detail}</span>}
      <Handle type='source' position={Position.Right} isConnectable={false} aria-label='The trigger starts the first node' />
    </div>
  )
})

const NODE_TYPES = { step: StepView, trigger: TriggerView }

interface CanvasProps {
  definition: Definition
  trigger: TriggerData
  linkFields: LinkFieldsByType
  selected: ReadonlySet<string>
  states: ReadonlyMap<string, NodeState | 'test'>
  /** Why nodes failed in the run shown. */
  errors: ReadonlyMap<string, string>
  inChildRuns: ReadonlyMap<string, InChildRuns>
  flagged: string | undefined
  onSelect: (ids: string[]) => void
  /** A drag started: the definition before it goes to the history once. */
  onDragStart: () => void
  onMove: (moves: ReadonlyMap<string, { x: number, y: number }>) => void
  onConnect: (source: string, handle: string, target: string) => void
  onDisconnect: (linkIds: string[]) => void
  onDelete: (nodeIds: string[]) => void
  onDropType: (type: string, position: { x: number, y: number }) => void
}

/**
 * The canvas (@xyflow/react through preact/compat): nodes dragged, linked by dragging from an
 * output to an input, panned and zoomed. It holds no state of its own: every change goes back to
 * the builder as a change of the definition. Flow nodes are reused while their workflow node,
 * selection and state are unchanged, so a drag re-renders only the node that moves. The trigger is
 * drawn too, before the node runs start at, but is none of the definition's nodes.
 */
export function Canvas (props: CanvasProps) {
  const { definition, linkFields, selected, states, errors, inChildRuns, flagged, trigger } = props
  const flow = useReactFlow()
  const cache = useRef(new Map<string, { key: unknown[], node: StepNode }>())
  // The nodes the engine forks after (core's withImplicitForks, the rule a save stores).
  const forking = useMemo(() => new Set(withImplicitForks(definition, 'all').implicitForks?.values()), [definition])
  const nodes = useMemo(() => definition.nodes.map((node): StepNode => {
    const state = states.get(node.id)
    const isSelected = selected.has(node.id)
    const children = state === undefined ? inChildRuns.get(node.id) : undefined
    const error = errors.get(node.id) ?? children?.error?.message
    const cached = cache.current.get(node.id)
    const runsAll = forking.has(node.id)
    const key = [node, isSelected, state, flagged === node.id, linkFields, error, children, runsAll]
    if (cached !== undefined && cached.key.every((part, i) => part === key[i])) return cached.node
    const made: StepNode = {
      id: node.id,
      type: 'step',
      position: node.position ?? { x: 0, y: 0 },
      selected: isSelected,
      ariaLabel: `Node ${node.id}, ${node.type}`,
      data: { node, handles: handlesOf(node, linkFields), state, flagged: flagged === node.id, error, inChildRuns: children, runsAll }
    }
    cache.current.set(node.id, { key, node: made })
    return made
  }), [definition.nodes, selected, states, errors, inChildRuns, flagged, linkFields, forking])
  // The node the engine starts at (core's startNode): the one the trigger links to.
  const entry = useMemo(() => startNode(definition, linkFields), [definition, linkFields])
  const triggerSelected = selected.has(TRIGGER_NODE_ID)
  const triggerNode = useMemo((): TriggerNode => ({
    id: TRIGGER_NODE_ID,
    type: 'trigger',
    position: { x: (entry?.position?.x ?? TRIGGER_OFFSET_X) - TRIGGER_OFFSET_X, y: entry?.position?.y ?? 0 },
    selected: triggerSelected,
    draggable: false,
    deletable: false,
    ariaLabel: `Trigger: ${trigger.kind}`,
    data: trigger
  }), [entry, triggerSelected, trigger.kind, trigger.detail])
  const flowNodes = useMemo(() => [triggerNode, ...nodes], [triggerNode, nodes])
  const edges = useMemo((): Edge[] => [
    ...(entry === undefined ? [] : [{ id: 'trigger-link', source: TRIGGER_NODE_ID, target: entry.id, deletable: false, selectable: false, className: 'trigger-link', markerEnd: { type: MarkerType.ArrowClosed }, ariaLabel: `The trigger starts ${entry.id}` }]),
    ...drawnLinks(definition, linkFields).map((link): Edge => ({
      id: link.id,
      source: link.source,
      target: link.target,
      sourceHandle: link.handle,
      label: link.label === '' ? undefined : link.label,
      markerEnd: { type: MarkerType.ArrowClosed },
      ariaLabel: `Link from ${link.source}${link.label === '' ? '' : ` (${link.label})`} to ${link.target}`,
      animated: states.get(link.source) !== undefined && states.get(link.target) !== undefined
    }))
  ], [definition, linkFields, states, entry])

  const onNodesChange = (changes: Array<NodeChange<StepNode | TriggerNode>>): void => {
    const moves = new Map<string, { x: number, y: number }>()
    let selection: Set<string> | undefined
    for (const change of changes) {
      if (change.type === 'position' && change.position !== undefined) moves.set(change.id, change.position)
      if (change.type === 'select') {
        selection ??= new Set(selected)
        if (change.selected) selection.add(change.id)
        else selection.delete(change.id)
      }
    }
    if (moves.size > 0) props.onMove(moves)
    if (selection !== undefined) props.onSelect([...selection])
  }

  return (
    <div
      class='canvas' role='application' aria-label='Workflow canvas: drag nodes, drag from an output to an input to link them'
      onDragOver={(event) => { event.preventDefault() }}
      onDrop={(event) => {
        event.preventDefault()
        const type = event.dataTransfer?.getData('application/x-switchboard-node-type')
        if (type !== undefined && type !== '') props.onDropType(type, flow.screenToFlowPosition({ x: event.clientX, y: event.clientY }))
      }}
    >
      <ReactFlow<StepNode | TriggerNode>
        nodes={flowNodes}
        edges={edges}
        nodeTypes={NODE_TYPES}
        onNodesChange={onNodesChange}
        onNodeDragStart={props.onDragStart}
        onSelectionDragStart={props.onDragStart}
        onConnect={(connection: Connection) => { props.onConnect(connection.source, connection.sourceHandle ?? 'next', connection.target) }}
        onEdgesDelete={(deleted) => { props.onDisconnect(deleted.map((edge) => edge.id)) }}
        onNodesDelete={(deleted) => { props.onDelete(deleted.map((node) => node.id)) }}
        deleteKeyCode={['Delete', 'Backspace']}
        fitView
        fitViewOptions={{ maxZoom: 1 }}
        minZoom={0.1}
        proOptions={{ hideAttribution: true }}
      >
        <Background />
        <Controls />
      </ReactFlow>
    </div>
  )
}
