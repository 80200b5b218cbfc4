import { useEffect, useState } from 'preact/hooks'
import { useLocation, useRoute } from 'preact-iso'
import { DOMAINS } from '@switchboard/core/db/values'
import { api } from '../api.ts'
import { ConfigForm } from '../components/config-form.tsx'
import { ErrorWorkflowField } from '../components/error-workflow-field.tsx'
import { GraphView } from '../components/graph-view.tsx'
import { NodePalette } from '../components/node-palette.tsx'
import { commaList, EMPTY_TRIGGER, TriggerFields, triggerDraftOf, triggerInputOf, type TriggerDraft } from '../components/trigger-fields.tsx'
import { ErrorNotice, Loading, PageTitle } from '../components/ui.tsx'
import { useAction, useNodeTypes } from '../hooks.ts'
import { withNode } from '../nodes.ts'
import { paths, webhookUrl } from '../paths.ts'
import type { Domain, NodeTypeInfo, Workflow, WorkflowInput, WorkflowNode } from '../types.ts'

/** The form's fields: the workflow's, its trigger's (components/trigger-fields.tsx), and its nodes and edges as JSON text. */
interface Draft extends TriggerDraft {
  name: string
  description: string
  domain: Domain
  tags: string
  isActive: boolean
  /** '' for none. */
  errorWorkflowId: string
  nodes: string
  edges: string
}

const json = (value: unknown): string => JSON.stringify(value, null, 2)

const EMPTY: Draft = {
  ...EMPTY_TRIGGER,
  name: '',
  description: '',
  domain: 'GENERAL',
  tags: '',
  isActive: true,
  errorWorkflowId: '',
  // The palette adds the first node (nodes.ts, withNode).
  nodes: '[]',
  edges: ''
}

function draftOf (workflow: Workflow): Draft {
  return {
    ...triggerDraftOf(workflow),
    name: workflow.name,
    description: workflow.description ?? '',
    domain: workflow.domain,
    tags: workflow.tags.join(', '),
    isActive: workflow.isActive,
    errorWorkflowId: workflow.errorWorkflowId ?? '',
    nodes: json(workflow.nodes),
    edges: workflow.edges === null || workflow.edges === undefined ? '' : json(workflow.edges)
  }
}

type Graph = { nodes: WorkflowNode[], edges: unknown } | { problem: string }

/** The draft's nodes and edges as the api takes them, or why their JSON cannot be sent. */
function graphOf (draft: Pick<Draft, 'nodes' | 'edges'>): Graph {
  let nodes: unknown
  let edges: unknown
  try {
    nodes = JSON.parse(draft.nodes)
  } catch (err) {
    return { problem: `Nodes are not valid JSON: ${(err as Error).message}` }
  }
  if (!Array.isArray(nodes)) return { problem: 'Nodes must be a JSON array' }
  try {
    edges = draft.edges.trim() === '' ? null : JSON.parse(draft.edges)
  } catch (err) {
    return { problem: `Edges are not valid JSON: ${(err as Error).message}` }
  }
  return { nodes: nodes as WorkflowNode[], edges }
}

function inputOf (draft: Draft, graph: { nodes: WorkflowNode[], edges: unknown }): WorkflowInput {
  return {
    name: draft.name,
    description: draft.description.trim() === '' ? null : draft.description,
    ...triggerInputOf(draft),
    domain: draft.domain,
    tags: commaList(draft.tags),
    isActive: draft.isActive,
    errorWorkflowId: draft.errorWorkflowId === '' ? null : draft.errorWorkflowId,
    nodes: graph.nodes,
    edges: graph.edges
  }
}

interface NodeFormsProps {
  nodes: WorkflowNode[]
  nodeTypes: NodeTypeInfo[] | undefined
  selected: string | undefined
  onSelect: (id: string) => void
  onConfig: (id: string, config: Record<string, unknown>) => void
  onErrors: (count: number) => void
}

/** The Form view of the nodes: pick a node, edit its config in the form its type's schema makes (components/config-form.tsx). */
function NodeForms ({ nodes, nodeTypes, selected, onSelect, onConfig, onErrors }: NodeFormsProps) {
  if (nodes.length === 0) return <p class='muted'>No nodes yet: add one from the palette above.</p>
  const node = nodes.find((candidate) => candidate.id === selected) ?? nodes[0]
  const nodeType = nodeTypes?.find((candidate) => candidate.type === node.type)
  return (
    <>
      <div class='node-picker' role='group' aria-label='Node to edit'>
        {nodes.map((candidate, i) => (
          <button type='button' key={i} aria-pressed={candidate === node} onClick={() => { onSelect(candidate.id) }}>
            <code>{candidate.id}</code> <span class='small'>{candidate.type}</span>
          </button>
        ))}
      </div>
      {nodeType !== undefined
        ? <ConfigForm key={`${node.id} ${node.type}`} nodeType={nodeType} node={node} onChange={(config) => { onConfig(node.id, config) }} onErrors={onErrors} />
        : nodeTypes === undefined
          ? <Loading what='the node types' />
          : <p class='notice'>{`${node.id} is of a type the service does not know (${node.type}): edit it in the JSON view.`}</p>}
    </>
  )
}

function Preview ({ graph }: { graph: Graph }) {
  if ('problem' in graph) return <p class='muted'>No preview while the JSON does not parse.</p>
  return <GraphView nodes={graph.nodes} edges={graph.edges} />
}

/** New workflow (/workflows/new) and editing one (/workflows/:id/edit): one form over the writable fields. */
export function WorkflowEditor () {
  const { params } = useRoute()
  const { route } = useLocation()
  const id = params.id as string | undefined
  const [draft, setDraft] = useState<Draft | undefined>(id === undefined ? EMPTY : undefined)
  const [loadError, setLoadError] = useState<Error | undefined>(undefined)
  const nodeTypes = useNodeTypes()
  const [view, setView] = useState<'form' | 'json'>('form')
  const [selected, setSelected] = useState<string | undefined>(undefined)
  const [formErrors, setFormErrors] = useState(0)

  useEffect(() => {
    if (id === undefined) return
    api.workflow(id).then((workflow) => { setDraft(draftOf(workflow)) }, (err: Error) => { setLoadError(err) })
  }, [id])

  const save = useAction(async () => {
    if (draft === undefined) return
    const graph = graphOf(draft)
    if ('problem' in graph || formErrors > 0) return
    const input = inputOf(draft, graph)
    const saved = id === undefined ? await api.createWorkflow(input) : await api.updateWorkflow(id, input)
    route(paths.workflow(saved.id))
  })

  if (draft === undefined) return loadError === undefined ? <Loading what='the workflow' /> : <ErrorNotice error={loadError} />
  const set = <K extends keyof Draft>(key: K, value: Draft[K]): void => { setDraft({ ...draft, [key]: value }) }
  const graph = graphOf(draft)
  // Adding a node or editing one in the form rewrites the nodes' JSON: not while it does not parse, which would lose the text.
  const nodes = graphOf({ nodes: draft.nodes, edges: '' })
  const addNode = (nodeType: NodeTypeInfo): void => {
    if ('problem' in nodes) return
    const added = withNode(nodes.nodes, nodeType, nodeTypes.data ?? [])
    set('nodes', json(added))
    setSelected(added.at(-1)?.id)
  }
  const setConfig = (nodeId: string, config: Record<string, unknown>): void => {
    if (!('problem' in nodes)) set('nodes', json(nodes.nodes.map((node) => node.id === nodeId ? { ...node, config } : node)))
  }
  const problem = 'problem' in graph ? 'json-problem' : formErrors > 0 ? 'form-problem' : undefined
  const toSave = id === undefined ? 'create the workflow' : 'save'

  return (
    <section>
      <PageTitle>{id === undefined ? 'New workflow' : `Edit ${draft.name}`}</PageTitle>
      <form class='editor' onSubmit={(event) => { event.preventDefault(); save.run() }}>
        <div class='grid'>
          <fieldset class='card'>
            <legend>Workflow</legend>
            <label for='wf-name'>Name</label>
            <input id='wf-name' required maxLength={200} value={draft.name} onInput={(e) => { set('name', e.currentTarget.value) }} />
            <label for='wf-description'>Description</label>
            <textarea id='wf-description' rows={2} maxLength={2000} value={draft.description} onInput={(e) => { set('description', e.currentTarget.value) }} />
            <label for='wf-domain'>Domain</label>
            <select id='wf-domain' value={draft.domain} onChange={(e) => { set('domain', e.currentTarget.value as Domain) }}>
              {DOMAINS.map((domain) => <option key={domain}>{domain}</option>)}
            </select>
            <label for='wf-tags'>Tags (comma-separated)</label>
            <input id='wf-tags' value={draft.tags} onInput={(e) => { set('tags', e.currentTarget.value) }} />
            <label class='check'><input type='checkbox' checked={draft.isActive} onChange={(e) => { set('isActive', e.currentTarget.checked) }} /> Active: listens to its trigger and may be fired</label>
            <ErrorWorkflowField workflowId={id} value={draft.errorWorkflowId} onPick={(errorWorkflowId) => { set('errorWorkflowId', errorWorkflowId) }} />
          </fieldset>
          <fieldset class='card'>
            <legend>Trigger</legend>
            <TriggerFields draft={draft} onChange={(trigger) => { setDraft({ ...draft, ...trigger }) }} webhookUrl={id === undefined ? undefined : webhookUrl(id)} />
          </fieldset>
          <fieldset class='card wide'>
            <legend>Nodes</legend>
            <p class='muted'>
              Each node: <code>id</code>, <code>type</code>, <code>config</code>, and <code>next</code> (the node after it).
              Templates such as <code>{'{{triggerData.name}}'}</code> or <code>{'{{n1.body.id}}'}</code> read the trigger data and earlier nodes’ outputs.
            </p>
            <NodePalette nodeTypes={nodeTypes} blocked={'problem' in nodes ? 'Fix the nodes’ JSON to add a node.' : undefined} onAdd={addNode} />
            <div class='view-toggle' role='group' aria-label='Edit the nodes as'>
              <button type='button' aria-pressed={view === 'form'} onClick={() => { setView('form') }}>Form</button>
              <button type='button' aria-pressed={view === 'json'} onClick={() => { setView('json') }}>JSON</button>
            </div>
            {view === 'json'
              ? (
                <>
                  <label for='wf-nodes'>Nodes (JSON array)</label>
                  <textarea id='wf-nodes' class='mono' rows={14} spellcheck={false} value={draft.nodes} onInput={(e) => { set('nodes', e.currentTarget.value) }} />
                </>
                )
              : 'problem' in nodes
                ? <p class='notice'>The nodes’ JSON does not parse: fix it in the JSON view.</p>
                : <NodeForms nodes={nodes.nodes} nodeTypes={nodeTypes.data} selected={selected} onSelect={setSelected} onConfig={setConfig} onErrors={setFormErrors} />}
            <details>
              <summary>Edges (optional, as a visual builder saves them)</summary>
              <label for='wf-edges'>Edges (JSON array of {'{source, target, sourceHandle?}'})</label>
              <textarea id='wf-edges' class='mono' rows={4} spellcheck={false} value={draft.edges} onInput={(e) => { set('edges', e.currentTarget.value) }} />
            </details>
            <h3>Preview</h3>
            <Preview graph={graph} />
          </fieldset>
        </div>
        {'problem' in graph && <p class='notice error' id='json-problem'>{`${graph.problem}. Fix it to ${toSave}.`}</p>}
        {problem === 'form-problem' && <p class='notice error' id='form-problem'>{`A config field of the node is not valid (marked above). Fix it to ${toSave}.`}</p>}
        <ErrorNotice error={save.error} />
        <div class='row'>
          <button type='submit' class='primary' disabled={save.busy || problem !== undefined} aria-describedby={problem}>{save.busy ? 'Saving…' : id === undefined ? 'Create workflow' : 'Save changes'}</button>
          <a class='button' href={id === undefined ? paths.workflows : paths.workflow(id)}>Cancel</a>
        </div>
      </form>
    </section>
  )
}
