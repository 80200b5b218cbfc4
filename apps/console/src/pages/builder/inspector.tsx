import { useEffect, useRef, useState } from 'preact/hooks'
import type { NodeReference } from '@switchboard/core/workflows/rename-node'
import { TemplateParameters } from '../../components/template-parameters.tsx'
import { ConfigForm, type TemplateHelp } from '../../components/config-form.tsx'
import { freeId } from '../../builder.ts'
import { inChildRunsText, nodeErrorsOf, type InChildRuns, type NodeState } from '../../graph.ts'
import { paths } from '../../paths.ts'
import type { NodeTypeInfo, Run, WorkflowNode } from '../../types.ts'

const json = (value: unknown): string => JSON.stringify(value, null, 2) ?? 'undefined'

interface InspectorProps {
  node: WorkflowNode
  nodeType: NodeTypeInfo | undefined
  takenIds: ReadonlySet<string>
  /** Values a field may take from elsewhere: credential names. */
  suggestionsFor: (field: string) => string[]
  /** What the node's templates may read, and their previews (ConfigForm's data picker). */
  templates: TemplateHelp
  onConfig: (config: Record<string, unknown>) => void
  /**
   * Renames the node and every reference to it, unless code mentions it and `force` is false: then nothing
   * changes and the mentions come back, for the user to confirm.
   */
  onRename: (to: string, force: boolean) => NodeReference[]
  onRemove: () => void
  onErrors: (count: number) => void
}

/**
 * The selected node: its id (a rename that would leave mentions in code asks first, listing them), its config
 * as a form from its type's schema (with suggestions), and its removal.
 */
export function Inspector ({ node, nodeType, takenIds, suggestionsFor, templates, onConfig, onRename, onRemove, onErrors }: InspectorProps) {
  const [id, setId] = useState(node.id)
  /** The mentions in code a rename to `id` would leave, while the user decides. */
  const [unrewritable, setUnrewritable] = useState<NodeReference[]>()
  const cancel = useRef<HTMLButtonElement>(null)
  // The question takes the focus, on its safe answer, so that the keyboard and screen readers meet it first.
  useEffect(() => { if (unrewritable !== undefined) cancel.current?.focus() }, [unrewritable])
  const renameError = id === node.id ? undefined : !/^[A-Za-z0-9_-]{1,100}$/.test(id) ? 'Letters, digits, _ and - only (1 to 100)' : takenIds.has(id) ? `${id} is taken` : undefined
  const submit = (): void => {
    if (renameError !== undefined || id === node.id) return
    const mentions = onRename(id, false)
    if (mentions.length > 0) setUnrewritable(mentions)
  }
  return (
    <section class='inspector' aria-labelledby='inspector-title'>
      <h3 id='inspector-title'>Node <code>{node.id}</code></h3>
      <form class='row' onSubmit={(event) => { event.preventDefault(); submit() }}>
        <label for='node-id'>Id</label>
        <input id='node-id' value={id} aria-invalid={renameError === undefined ? undefined : true} aria-describedby={renameError === undefined ? undefined : 'node-id-error'} onInput={(e) => { setId(e.currentTarget.value); setUnrewritable(undefined) }} />
        <button type='submit' disabled={renameError !== undefined || id === node.id || unrewritable !== undefined}>Rename</button>
        <button type='button' class='danger' onClick={onRemove} aria-label={`Remove node ${node.id}`}>Remove</button>
      </form>
      {renameError !== undefined && <p class='field-error' id='node-id-error' role='alert'>{renameError}</p>}
      {unrewritable !== undefined && (
        <div class='notice rename-confirm' role='alertdialog' aria-labelledby='rename-confirm-title' aria-describedby='rename-confirm-list'>
          <p id='rename-confirm-title'>Code mentions <code>{node.id}</code> and is not rewritten: rename it to <code>{id}</code> anyway?</p>
          <ul id='rename-confirm-list'>
            {unrewritable.map((mention) => <li key={`${mention.nodeId}:${mention.field}`}>node <code>{mention.nodeId}</code>, field <code>{mention.field}</code></li>)}
          </ul>
          <div class='row'>
            <button type='button' class='danger' onClick={() => { onRename(id, true) }}>Rename anyway</button>
            <button type='button' ref={cancel} onClick={() => { setUnrewritable(undefined) }}>Cancel</button>
          </div>
        </div>
      )}
      {nodeType === undefined
        ? <p class='notice error'>Unknown node type {node.type}: edit it in the JSON editor.</p>
        : (
          <>
            {node.type === 'send_chat_template' && <TemplateParameters key={`t-${node.id}`} node={node} onChange={onConfig} />}
            <ConfigForm key={node.id} nodeType={nodeType} node={node} onChange={onConfig} onErrors={onErrors} suggestionsFor={suggestionsFor} templates={templates} />
          </>
          )}
    </section>
  )
}

/** A run opened on the canvas: `run` (its own, or one of its child runs) drawn on the workflow. */
const onCanvas = (run: Pick<Run, 'id' | 'workflowId'>): string => `${paths.builder(run.workflowId)}?run=${encodeURIComponent(run.id)}`

/**
 * Why the selected node failed in the run shown, or in one of its child runs (a parallel's branch):
 * at the top of the node panel, above its settings, where it is seen first.
 */
export function NodeFailure ({ run, nodeId, inChildRuns }: { run: Run, nodeId: string, inChildRuns: InChildRuns | undefined }) {
  const own = nodeErrorsOf(run.logs).get(nodeId)
  const inChild = own === undefined ? inChildRuns?.error : undefined
  if (own === undefined && inChild === undefined) return null
  return (
    <div class='notice error node-failure' id='node-failure'>
      <strong>{inChild === undefined ? 'Failed' : <>Failed in child run <a href={onCanvas({ id: inChild.runId, workflowId: run.workflowId })} class='mono'>{inChild.runId}</a></>}</strong>
      <p class='node-failure-message'>{own ?? inChild?.message}</p>
    </div>
  )
}

interface NodeRunProps {
  run: Run
  nodeId: string
  path: string[]
  state: NodeState | 'test' | undefined
  /** The child runs it ran in, when not in the run itself (a parallel's branch). */
  inChildRuns: InChildRuns | undefined
  onRetryFrom: (() => void) | undefined
}

const STATE_WORDS: Record<NodeState | 'test', string> = { done: 'ran', test: 'ran', failed: 'failed', current: 'running' }

/**
 * What a node did in the run shown: its state (or the child runs it ran in, each to open on the
 * canvas), its input (what its templates could read: the trigger's data and the outputs of the
 * nodes before it on the path), its output, its attempts and its log lines.
 */
export function NodeRun ({ run, nodeId, path, state, inChildRuns, onRetryFrom }: NodeRunProps) {
  const before = path.slice(0, Math.max(0, path.indexOf(nodeId)))
  const input = { triggerData: run.triggerData, ...Object.fromEntries(before.filter((id) => id in run.result).map((id) => [id, run.result[id]])) }
  const lines = run.logs.filter((log) => log.nodeId === nodeId)
  const attempts = Math.max(1, lines.filter((log) => /\battempt\b/i.test(log.message)).length)
  return (
    <section class='node-run' aria-labelledby='node-run-title'>
      <h3 id='node-run-title'>In run <code>{run.id}</code>: {state !== undefined ? STATE_WORDS[state] : inChildRuns !== undefined ? inChildRunsText(inChildRuns) : 'not reached'}</h3>
      {state !== undefined && <p class='small'>Attempts: {attempts}</p>}
      {state === undefined && inChildRuns !== undefined && (
        <ul class='small child-run-states' aria-label={`Child runs ${nodeId} ran in`}>
          {inChildRuns.runs.map((child) => <li key={child.id}><a href={onCanvas({ id: child.id, workflowId: run.workflowId })} class='mono'>{child.id}</a>: {STATE_WORDS[child.state]}</li>)}
        </ul>
      )}
      <details open>
        <summary>Input</summary>
        <pre class='mono' aria-label={`Input of ${nodeId}`}>{json(input)}</pre>
      </details>
      <details open>
        <summary>Output</summary>
        <pre class='mono' aria-label={`Output of ${nodeId}`}>{nodeId in run.result ? json(run.result[nodeId]) : '—'}</pre>
      </details>
      {lines.length > 0 && (
        <details>
          <summary>Log ({lines.length})</summary>
          <ul class='log-lines'>{lines.map((log) => <li key={log.id} class={`level-${log.level.toLowerCase()}`}>{log.level} {log.message}</li>)}</ul>
        </details>
      )}
      {onRetryFrom !== undefined && <button type='button' class='primary' onClick={onRetryFrom}>Retry from this node</button>}
    </section>
  )
}

/** A node id free in `taken` for a new node of `type`. */
export const newNodeId = (type: string, taken: ReadonlySet<string>): string => freeId(type.replace(/[^A-Za-z0-9_-]/g, '_'), taken)
