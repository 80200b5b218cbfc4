import { useRef, useState } from 'preact/hooks'
import type { Loaded } from '../hooks.ts'
import { paletteOf } from '../nodes.ts'
import type { NodeTypeInfo } from '../types.ts'
import { ErrorNotice, Loading } from './ui.tsx'

interface NodePaletteProps {
  nodeTypes: Loaded<NodeTypeInfo[]>
  /** Why no node can be added now, if so. */
  blocked: string | undefined
  onAdd: (nodeType: NodeTypeInfo) => void
  /** Items may be dragged onto the builder's canvas as well as clicked. */
  draggable?: boolean
}

/** Every node type the service runs (GET /api/automation/node-types), by group, each with its description: a click adds one. */
export function NodePalette ({ nodeTypes, blocked, onAdd, draggable = false }: NodePaletteProps) {
  const { data, error, reload } = nodeTypes
  return (
    <section class='palette' aria-labelledby='palette-title'>
      <h3 id='palette-title'>Add a node</h3>
      {data === undefined && error === undefined && <Loading what='the node types' />}
      {data === undefined && error !== undefined && (
        <div class='row'>
          <ErrorNotice error={error} />
          <button type='button' onClick={reload}>Retry</button>
        </div>
      )}
      {data !== undefined && blocked !== undefined && <p class='muted small'>{blocked}</p>}
      {data !== undefined && paletteOf(data).map(({ group, nodeTypes: types }) => (
        <div key={group} class='palette-group'>
          <h4>{group}</h4>
          <ul class='palette-items'>
            {types.map((nodeType) => (
              <li key={nodeType.type}>
                <button
                  type='button' class='palette-item' aria-label={`Add ${nodeType.type}`} aria-describedby={`palette-${nodeType.type}`}
                  disabled={blocked !== undefined} title={nodeType.description} onClick={() => { onAdd(nodeType) }}
                  draggable={draggable}
                  onDragStart={draggable ? (event) => { event.dataTransfer?.setData('application/x-switchboard-node-type', nodeType.type) } : undefined}
                >
                  <code>{nodeType.type}</code>
                  <span class='palette-about' id={`palette-${nodeType.type}`}>{nodeType.description}</span>
                </button>
              </li>
            ))}
          </ul>
        </div>
      ))}
    </section>
  )
}

/**
 * The builder's palette: beside the canvas on wide screens; narrower (a tablet), a drawer that a button
 * opens over the canvas (styles.css). Its items are dragged onto the canvas or clicked, either closing it;
 * while one is dragged the drawer lets the pointer through, so that it can be dropped under the drawer too.
 */
export function PaletteDrawer ({ nodeTypes, onAdd }: Pick<NodePaletteProps, 'nodeTypes' | 'onAdd'>) {
  const [open, setOpen] = useState(false)
  const [dragging, setDragging] = useState(false)
  const toggle = useRef<HTMLButtonElement>(null)
  return (
    <aside class={`builder-palette${open ? ' open' : ''}${dragging ? ' dragging' : ''}`}>
      <button type='button' ref={toggle} class='palette-toggle' aria-expanded={open} aria-controls='palette-drawer' onClick={() => { setOpen(!open) }}>Add a node</button>
      <div
        id='palette-drawer' class='palette-drawer'
        onKeyDown={(event) => {
          if (event.key !== 'Escape') return
          setOpen(false)
          toggle.current?.focus()
        }}
        onDragStart={() => { setDragging(true) }}
        onDragEnd={() => { setDragging(false); setOpen(false) }}
      >
        <NodePalette nodeTypes={nodeTypes} blocked={undefined} onAdd={(nodeType) => { setOpen(false); onAdd(nodeType) }} draggable />
      </div>
    </aside>
  )
}
