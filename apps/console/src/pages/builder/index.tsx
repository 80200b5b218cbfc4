import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { useLocation, useRoute } from 'preact-iso'
import { ReactFlowProvider } from '@xyflow/react'
import '@xyflow/react/dist/style.css'
import { renameNode, type NodeReference } from '@switchboard/core/workflows/rename-node'
import { api, ApiError } from '../../api.ts'
import { PaletteDrawer } from '../../components/node-palette.tsx'
import { triggerDraftOf, triggerInputOf, type TriggerDraft } from '../../components/trigger-fields.tsx'
import { ErrorNotice, Loading, PageTitle } from '../../components/ui.tsx'
import {
  autoLayout, connect, disconnect, drawnLinks, freeHandle, pasteNodes, pushHistory, removeNodes, renameTraitsOf, upstreamOf, withPositions,
  type Definition, type History
} from '../../builder.ts'
import { nodeErrorsOf, pathOf, statesOf } from '../../graph.ts'
import { linkFieldsOf, useData, useLeaveGuard, useNodeTypes } from '../../hooks.ts'
import { startingConfig } from '../../nodes.ts'
import { paths, webhookUrl } from '../../paths.ts'
import type { Run, Workflow, WorkflowChanges, WorkflowNode } from '../../types.ts'
import { Canvas, TRIGGER_NODE_ID } from './canvas.tsx'
import { useInChildRuns } from './child-runs.ts'
import { BuilderHeader } from './header.tsx'
import { Inspector, NodeFailure, NodeRun, newNodeId } from './inspector.tsx'
import { NodeDetails } from './node-details.tsx'
import { templateHelp } from './template-help.ts'
import { TriggerPanel, triggerSummaryOf, useTestCapture } from './trigger.tsx'
import { TryInChat, triedInChat } from './try-chat.tsx'
import { Versions } from './versions.tsx'

const TERMINAL = new Set(['SUCCESS', 'FAILED', 'CANCELLED'])
const POLL_MS = 300

/** The node an API refusal names (`Node n3: …`), to point at on the canvas. */
const nodeNamedBy = (message: string): string | undefined => /^Node ([A-Za-z0-9_-]+)[:( ]/.exec(message)?.[1]

/** The workflow's fields the builder edits beside its graph, once edited: saved with it. */
interface SettingsEdits {
  name?: string
  trigger?: TriggerDraft
}

const LEAVE_QUESTION = 'This workflow has unsaved changes. Leave the builder without saving them?'

/**
 * The builder's route. Each workflow gets a builder of its own: going from one to another (a link to
 * the workflow a node calls, Back) starts afresh, with nothing of the one before (its "not found" included).
 */
export function Builder () {
  const { params } = useRoute()
  return <WorkflowBuilder key={params.id} id={params.id!} />
}

/**
 * The workflow builder (README, The workflow builder): the workflow drawn on a canvas after its trigger,
 * built by dragging and forms, tested while it is built ("Run to here" with pinned data, a captured test
 * request), and runs opened on it to debug (each node's input, output and log; retry from a node). It saves
 * `nodes` and `edges` exactly as the API stores them, positions in each node's `position`, with the name
 * and trigger when edited; leaving it unsaved asks first.
 */
function WorkflowBuilder ({ id }: { id: string }) {
  const location = useLocation()
  const runId = location.query.run
  const nodeTypes = useNodeTypes()
  const linkFields = useMemo(() => linkFieldsOf(nodeTypes.data), [nodeTypes.data])
  const renameTraits = useMemo(() => renameTraitsOf(nodeTypes.data ?? []), [nodeTypes.data])
  const credentials = useData(api.credentials, [])
  const [workflow, setWorkflow] = useState<Workflow>()
  const [loadError, setLoadError] = useState<Error>()
  const [definition, setDefinition] = useState<Definition>({ nodes: [], edges: null })
  const [history, setHistory] = useState<History>({ past: [], future: [] })
  const [edits, setEdits] = useState<SettingsEdits>({})
  const [dirty, setDirty] = useState(false)
  const [selected, setSelected] = useState<string[]>([])
  const [clipboard, setClipboard] = useState<WorkflowNode[]>([])
  const [formErrors, setFormErrors] = useState(0)
  const [status, setStatus] = useState('')
  const [error, setError] = useState<Error>()
  const [busy, setBusy] = useState(false)
  const [run, setRun] = useState<Run>()
  const [pinText, setPinText] = useState('')
  /** The selected node opened wide: input, settings and output side by side (NodeDetails). */
  const [detailsOpen, setDetailsOpen] = useState(false)
  /** Starts work a handler does not wait for; what it throws is shown. */
  const later = (work: Promise<unknown>): void => { work.catch((err: unknown) => { setError(err as Error) }) }
  const current = useRef(definition)
  current.current = definition

  const load = async (): Promise<void> => {
    try {
      const loaded = await api.workflow(id)
      setWorkflow(loaded)
      setPinText(loaded.pinnedData === null || loaded.pinnedData === undefined ? '' : JSON.stringify(loaded.pinnedData, null, 2))
      setDefinition(withPositions({ nodes: loaded.nodes, edges: loaded.edges }, linkFields))
      setEdits({})
      setDirty(false)
      setHistory({ past: [], future: [] })
    } catch (err) {
      setLoadError(err as Error)
    }
  }
  useEffect(() => { if (nodeTypes.data !== undefined) later(load()) }, [id, nodeTypes.data])

  /** Follows a run until it ends, showing it on the canvas as it goes. */
  const follow = async (followed: string): Promise<void> => {
    for (;;) {
      const shown = await api.run(followed)
      setRun(shown)
      if (TERMINAL.has(shown.status)) return
      await new Promise((resolve) => setTimeout(resolve, POLL_MS))
    }
  }
  useEffect(() => {
    if (runId === undefined) { setRun(undefined); return }
    follow(runId).catch((err: unknown) => { setError(err as Error) })
  }, [runId])

  const change = (next: Definition): void => {
    setHistory((past) => pushHistory(past, current.current))
    setDefinition(next)
    setDirty(true)
    setError(undefined)
  }
  const undo = (): void => {
    const previous = history.past.at(-1)
    if (previous === undefined) return
    setHistory({ past: history.past.slice(0, -1), future: [definition, ...history.future] })
    setDefinition(previous)
    setDirty(true)
  }
  const redo = (): void => {
    const [next, ...rest] = history.future
    if (next === undefined) return
    setHistory({ past: [...history.past, definition], future: rest })
    setDefinition(next)
    setDirty(true)
  }
  const copy = (): void => {
    const copied = definition.nodes.filter((node) => selected.includes(node.id))
    if (copied.length === 0) return
    setClipboard(copied)
    setStatus(`Copied ${copied.length} node${copied.length === 1 ? '' : 's'}`)
  }
  const paste = (): void => {
    if (clipboard.length === 0) return
    const { definition: next, pasted } = pasteNodes(definition, clipboard, { x: 40, y: 40 }, linkFields)
    change(next)
    setSelected(pasted)
  }
  /**
   * Renames node `from` in the unsaved definition on the canvas, with every reference core's renameNode rewrites
   * (README, The workflow builder). While code mentions it, nothing changes unless `force`: the mentions come back to be confirmed.
   */
  const rename = (from: string, to: string, force: boolean): NodeReference[] => {
    try {
      const renamed = renameNode(current.current, from, to, renameTraits)
      if (!force && renamed.unrewritable.length > 0) return renamed.unrewritable
      change({ nodes: renamed.nodes, edges: renamed.edges })
      setSelected([to])
      const references = renamed.rewritten.length
      setStatus(`Renamed ${from} to ${to}${references === 0 ? '' : `, and ${references} ${references === 1 ? 'reference' : 'references'} to it`}`)
    } catch (err) {
      setError(err as Error)
    }
    return []
  }
  /**
   * Adds a node of `type` at `position` (where it was dropped) or, added from the palette while one
   * node is selected, after that node: linked from its first free way out (freeHandle) and placed
   * to its right, so that a workflow is built by clicks alone.
   */
  const addNode = (type: string, position?: { x: number, y: number }): void => {
    const nodeType = nodeTypes.data?.find((candidate) => candidate.type === type)
    if (nodeType === undefined) return
    const taken = new Set(definition.nodes.map((node) => node.id))
    const after = position === undefined && selected.length === 1 ? definition.nodes.find((node) => node.id === selected[0]) : undefined
    const handle = after === undefined ? undefined : freeHandle(after, linkFields)
    const siblings = after === undefined ? 0 : drawnLinks(definition, linkFields).filter((link) => link.source === after.id).length
    const placed = position ?? (after?.position === undefined
      ? { x: 40 + (definition.nodes.length % 6) * 40, y: 40 + definition.nodes.length * 20 }
      : { x: after.position.x + 240, y: after.position.y + siblings * 100 })
    const node: WorkflowNode = { id: newNodeId(type, taken), type, config: startingConfig(nodeType), position: placed }
    const added = { ...definition, nodes: [...definition.nodes, node] }
    change(after === undefined || handle === undefined ? added : connect(added, after.id, handle, node.id, linkFields))
    setSelected([node.id])
    setStatus(after === undefined || handle === undefined ? `Added ${node.id}` : `Added ${node.id} after ${after.id}${handle === 'next' ? '' : ` (${handle})`}`)
  }

  const editSettings = (changed: SettingsEdits): void => {
    setEdits((before) => ({ ...before, ...changed }))
    setDirty(true)
    setError(undefined)
  }
  /** What Save sends: the canvas's nodes and edges, and the name and trigger when they were edited. */
  const draftChanges = (): WorkflowChanges => ({
    nodes: definition.nodes,
    edges: definition.edges,
    ...(edits.name !== undefined && { name: edits.name }),
    ...(edits.trigger !== undefined && triggerInputOf(edits.trigger))
  })
  /** Sends `changes`, then holds the workflow as saved and says so with `done`; a refusal is shown. */
  const write = async (changes: WorkflowChanges, done: (saved: Workflow) => string): Promise<Workflow | undefined> => {
    setBusy(true)
    setError(undefined)
    try {
      const saved = await api.updateWorkflow(id, changes)
      setWorkflow(saved)
      if (changes.nodes !== undefined) {
        setEdits({})
        setDirty(false)
      }
      setStatus(done(saved))
      return saved
    } catch (err) {
      setError(err as Error)
      return undefined
    } finally {
      setBusy(false)
    }
  }
  const save = async (): Promise<Workflow | undefined> => await write(draftChanges(), (saved) => `Saved: version ${saved.version}`)
  /** Activates or deactivates the workflow, saving the draft with it when it changed: what becomes active is what is drawn. */
  const setActive = async (isActive: boolean): Promise<void> => {
    await write({ ...(dirty ? draftChanges() : {}), isActive }, (saved) => `${saved.isActive ? 'Activated' : 'Deactivated'}: version ${saved.version}`)
  }
  const canSave = dirty && !busy && formErrors === 0

  /** A test run of the saved workflow (saved first when changed), shown on the canvas as it goes. */
  const test = async (untilNodeId?: string): Promise<void> => {
    if (dirty && await save() === undefined) return
    setError(undefined)
    try {
      const { runId: started } = await api.testWorkflow(id, untilNodeId === undefined ? {} : { untilNodeId })
      setStatus(untilNodeId === undefined ? 'Test run started' : `Test run to ${untilNodeId} started`)
      location.route(`${paths.builder(id)}?run=${encodeURIComponent(started)}`, true)
    } catch (err) {
      setError(err as Error)
    }
  }
  const pin = async (data: unknown): Promise<void> => {
    setError(undefined)
    try {
      const saved = await api.updateWorkflow(id, { pinnedData: data })
      setWorkflow(saved)
      setPinText(data === null ? '' : JSON.stringify(data, null, 2))
      setStatus(data === null ? 'Pinned data removed' : 'Data pinned: test runs use it')
    } catch (err) {
      setError(err as Error)
    }
  }
  const pinTyped = (): void => {
    if (pinText.trim() === '') { later(pin(null)); return }
    try {
      later(pin(JSON.parse(pinText)))
    } catch {
      setError(new Error('Pinned data must be JSON'))
    }
  }
  const capture = useTestCapture(id, (pinnedData) => {
    setWorkflow((shown) => shown === undefined ? shown : { ...shown, pinnedData })
    setPinText(JSON.stringify(pinnedData, null, 2))
    setStatus('Captured a request: test runs use it')
  }, setError)
  /** Listens for a test request to the saved workflow, saved first when changed (a trigger just set to WEBHOOK, say). */
  const listen = async (): Promise<void> => {
    if (dirty && await save() === undefined) return
    setError(undefined)
    await capture.listen()
  }
  const retryFrom = async (nodeId: string): Promise<void> => {
    if (run === undefined) return
    try {
      const { runId: started } = await api.retryRunFrom(run.id, nodeId)
      setStatus(`Retrying from ${nodeId}`)
      location.route(`${paths.builder(id)}?run=${encodeURIComponent(started)}`, true)
    } catch (err) {
      setError(err as Error)
    }
  }

  // On the document: a click on the canvas leaves the focus on the page's body.
  const onKeyDown = (event: KeyboardEvent): void => {
    const mod = event.ctrlKey || event.metaKey
    if (!mod) return
    const key = event.key.toLowerCase()
    // Save from anywhere, a field included, as an editor does; the browser's "save the page" is never wanted here.
    if (key === 's') {
      event.preventDefault()
      if (formErrors > 0) setError(new Error('A field is not valid (marked): fix it to save'))
      else if (canSave) later(save())
      return
    }
    // In a field, undo, copy and paste are the field's own.
    const target = event.target as HTMLElement
    if (['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName) || target.isContentEditable) return
    if (key === 'z' && !event.shiftKey) undo()
    else if ((key === 'z' && event.shiftKey) || key === 'y') redo()
    else if (key === 'c') copy()
    else if (key === 'v') paste()
    else return
    event.preventDefault()
  }

  useLeaveGuard(dirty, LEAVE_QUESTION)
  const keys = useRef(onKeyDown)
  keys.current = onKeyDown
  useEffect(() => {
    const listener = (event: KeyboardEvent): void => { keys.current(event) }
    document.addEventListener('keydown', listener)
    return () => { document.removeEventListener('keydown', listener) }
  }, [])

  const path = useMemo(() => run === undefined ? [] : pathOf(run.logs), [run])
  const states = useMemo(() => {
    if (run === undefined) return new Map()
    return statesOf(run, path)
  }, [run, path])
  const errors = useMemo(() => run === undefined ? new Map<string, string>() : nodeErrorsOf(run.logs), [run])
  const inChildRuns = useInChildRuns(run)
  const taken = useMemo(() => new Set(definition.nodes.map((node) => node.id)), [definition.nodes])
  const flagged = error === undefined ? undefined : nodeNamedBy(error.message)
  const only = selected.length === 1 ? definition.nodes.find((node) => node.id === selected[0]) : undefined
  /** What the selected node's templates may read: the trigger's data and the outputs of the nodes before it, from the run shown or the pinned data. */
  const data = useMemo((): Record<string, unknown> => {
    if (only === undefined) return {}
    const upstream = upstreamOf(definition, only.id, linkFields)
    const outputs = run === undefined ? [] : Object.entries(run.result).filter(([nodeId]) => upstream.has(nodeId))
    return { triggerData: run === undefined ? workflow?.pinnedData ?? {} : run.triggerData, ...Object.fromEntries(outputs) }
  }, [only?.id, definition, linkFields, run, workflow])
  const templates = useMemo(() => templateHelp(data), [data])
  useEffect(() => { if (only === undefined) setDetailsOpen(false) }, [only === undefined])
  const suggestionsFor = (field: string): string[] => field === 'credential' ? (credentials.data ?? []).map((credential) => credential.name) : []
  /** The selected node's form: in the side panel, or in the middle of NodeDetails while that is open. */
  const inspectorOf = (node: WorkflowNode) => (
    <Inspector
      key={node.id} node={node} nodeType={nodeTypes.data?.find((candidate) => candidate.type === node.type)} takenIds={taken}
      suggestionsFor={suggestionsFor}
      templates={templates}
      onConfig={(config) => { change({ ...definition, nodes: definition.nodes.map((other) => other.id === node.id ? { ...other, config } : other) }) }}
      onRename={(to, force) => rename(node.id, to, force)}
      onRemove={() => { change(removeNodes(definition, [node.id], linkFields)); setSelected([]); setDetailsOpen(false) }}
      onErrors={setFormErrors}
    />
  )
  const triggerSelected = selected.length === 1 && selected[0] === TRIGGER_NODE_ID
  const trigger = edits.trigger ?? (workflow === undefined ? undefined : triggerDraftOf(workflow))
  const url = webhookUrl(id)

  if (loadError !== undefined) {
    return <section><PageTitle>Builder</PageTitle><ErrorNotice error={loadError} />{loadError instanceof ApiError && loadError.status === 404 && <p>No such workflow.</p>}</section>
  }
  if (workflow === undefined || trigger === undefined || nodeTypes.data === undefined) return <Loading what='the workflow' />

  return (
    <section class='builder'>
      <BuilderHeader
        name={edits.name ?? workflow.name} onName={(name) => { editSettings({ name }) }}
        isActive={workflow.isActive} activationBlocked={busy || (dirty && formErrors > 0)} onActivate={(isActive) => { later(setActive(isActive)) }}
      />
      <div class='toolbar row' role='toolbar' aria-label='Builder'>
        <button type='button' class='primary' disabled={!canSave} aria-keyshortcuts='Control+S' onClick={() => { later(save()) }}>{busy ? 'Saving…' : dirty ? 'Save' : 'Saved'}</button>
        <button type='button' disabled={history.past.length === 0} onClick={undo} aria-keyshortcuts='Control+Z'>Undo</button>
        <button type='button' disabled={history.future.length === 0} onClick={redo} aria-keyshortcuts='Control+Shift+Z'>Redo</button>
        <button type='button' disabled={selected.length === 0} onClick={copy} aria-keyshortcuts='Control+C'>Copy</button>
        <button type='button' disabled={clipboard.length === 0} onClick={paste} aria-keyshortcuts='Control+V'>Paste</button>
        <button type='button' onClick={() => { change(autoLayout(definition, linkFields)) }}>Auto-layout</button>
        <button type='button' onClick={() => { later(test()) }}>Test run</button>
        <a class='button' href={paths.editWorkflow(id)}>Settings and JSON</a>
        <a class='button' href={paths.workflow(id)}>Workflow</a>
        <span class='muted small'>version {workflow.version}</span>
      </div>
      <p role='status' class='small' id='builder-status'>{status}</p>
      {error !== undefined && <p class='notice error' role='alert' id='builder-error'>{error.message}</p>}
      <div class='builder-grid'>
        <PaletteDrawer nodeTypes={nodeTypes} onAdd={(nodeType) => { addNode(nodeType.type) }} />
        <ReactFlowProvider>
          <Canvas
            definition={definition}
            trigger={triggerSummaryOf(trigger, url)}
            linkFields={linkFields}
            selected={new Set(selected)}
            states={states}
            errors={errors}
            inChildRuns={inChildRuns}
            flagged={flagged}
            onSelect={setSelected}
            onDragStart={() => { setHistory((past) => pushHistory(past, current.current)) }}
            onMove={(moves) => {
              setDefinition((before) => ({ ...before, nodes: before.nodes.map((node) => moves.has(node.id) ? { ...node, position: moves.get(node.id)! } : node) }))
              setDirty(true)
            }}
            onConnect={(source, handle, target) => { change(connect(definition, source, handle, target, linkFields)) }}
            onDisconnect={(linkIds) => {
              // Last first: removing a list item shifts the indexes of the ones after it.
              let next = definition
              for (const linkId of [...linkIds].sort().reverse()) next = disconnect(next, linkId)
              change(next)
            }}
            onDelete={(ids) => { change(removeNodes(definition, ids, linkFields)); setSelected([]) }}
            onDropType={(type, position) => { addNode(type, position) }}
          />
        </ReactFlowProvider>
        <aside class='builder-side'>
          {triggerSelected
            ? (
              <TriggerPanel
                draft={trigger} onChange={(changed) => { editSettings({ trigger: changed }) }} webhookUrl={url}
                isActive={workflow.isActive} capture={capture.capture} onListen={() => { later(listen()) }}
              />
              )
            : only === undefined
              ? <p class='muted'>{selected.length > 1 ? `${selected.length} nodes selected: copy, paste or delete them.` : 'Select a node, or the trigger, to configure it; drag from the palette to add a node.'}</p>
              : (
                <>
                  {run !== undefined && <NodeFailure run={run} nodeId={only.id} inChildRuns={inChildRuns.get(only.id)} />}
                  {detailsOpen
                    ? <NodeDetails nodeId={only.id} input={data} settings={inspectorOf(only)} run={run} error={errors.get(only.id)} onClose={() => { setDetailsOpen(false) }} />
                    : inspectorOf(only)}
                  <div class='row'>
                    <button type='button' onClick={() => { later(test(only.id)) }}>Run to here</button>
                    <button type='button' onClick={() => { setDetailsOpen(true) }}>Input, settings and output side by side</button>
                  </div>
                  {run !== undefined && (
                    <NodeRun
                      run={run} nodeId={only.id} path={path} state={states.get(only.id)} inChildRuns={inChildRuns.get(only.id)}
                      onRetryFrom={run.status === 'FAILED' ? () => { later(retryFrom(only.id)) } : undefined}
                    />
                  )}
                </>
                )}
          <section aria-labelledby='pinned-title'>
            <h3 id='pinned-title'>Pinned data</h3>
            <p class='muted small'>The triggerData of test runs; real triggers never use it.</p>
            <textarea id='pinned-data' class='mono' rows={5} aria-label='Pinned data (JSON)' value={pinText} onInput={(e) => { setPinText(e.currentTarget.value) }} />
            <div class='row'>
              <button type='button' onClick={pinTyped}>Pin</button>
              {run !== undefined && <button type='button' onClick={() => { later(pin(run.triggerData)) }}>Copy this run's data as pinned data</button>}
            </div>
          </section>
          {run !== undefined && (
            <p class='small'>
              Run <a href={paths.run(run.id)}>{run.id}</a>: {run.status}{run.test ? ' (test)' : ''}{run.error === null ? '' : ` — ${run.error}`}
              {' '}<a href={paths.builder(id)}>Close run</a>
            </p>
          )}
          {triedInChat(workflow) && <TryInChat workflow={workflow} nodes={definition.nodes} nodeTypes={nodeTypes.data} onRun={(started) => { location.route(`${paths.builder(id)}?run=${encodeURIComponent(started)}`, true) }} />}
          <Versions workflowId={id} current={workflow.version} onRestored={() => { later(load()) }} />
        </aside>
      </div>
    </section>
  )
}
