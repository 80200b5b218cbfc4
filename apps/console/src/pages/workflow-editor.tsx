import { useEffect, useState } from 'preact/hooks'
import { useLocation, useRoute } from 'preact-iso'
import { DOMAINS } from '@switchboard/core/db/values'
import { api } from '../api.ts'
import { ConfigForm } from '../components/config-form.tsx'
import { GraphView } from '../components/graph-view.tsx'
import { NodePalette } from '../components/node-palette.tsx'
import { ErrorNotice, Loading, PageTitle } from '../components/ui.tsx'
import { useAction, useNodeTypes } from '../hooks.ts'
import { withNode } from '../nodes.ts'
import { paths } from '../paths.ts'
import { TRIGGER_TYPE_CHOICES, type Domain, type NodeTypeInfo, type TriggerType, type Workflow, type WorkflowInput, type WorkflowNode } from '../types.ts'

interface Draft {
  name: string
  description: string
  triggerType: TriggerType
  domain: Domain
  tags: string
  isActive: boolean
  cronExpression: string
  timezone: string
  eventName: string
  keywords: string
  match: string
  nodes: string
  edges: string
  /** Trigger settings the form has no field for, kept as they were. */
  otherConfig: Record<string, unknown>
}

const json = (value: unknown): string => JSON.stringify(value, null, 2)

const EMPTY: Draft = {
  name: '',
  description: '',
  triggerType: 'MANUAL',
  domain: 'GENERAL',
  tags: '',
  isActive: true,
  cronExpression: '',
  timezone: 'UTC',
  eventName: '',
  keywords: '',
  match: 'contains',
  // The palette adds the first node (nodes.ts, withNode).
  nodes: '[]',
  edges: '',
  otherConfig: {}
}

function draftOf (workflow: Workflow): Draft {
  const { cronExpression, timezone, eventName, keywords, match, ...otherConfig } = workflow.triggerConfig
  return {
    name: workflow.name,
    description: workflow.description ?? '',
    triggerType: workflow.triggerType,
    domain: workflow.domain,
    tags: workflow.tags.join(', '),
    isActive: workflow.isActive,
    cronExpression: typeof cronExpression === 'string' ? cronExpression : '',
    timezone: typeof timezone === 'string' ? timezone : 'UTC',
    eventName: typeof eventName === 'string' ? eventName : '',
    keywords: Array.isArray(keywords) ? keywords.join(', ') : '',
    match: typeof match === 'string' ? match : 'contains',
    nodes: json(workflow.nodes),
    edges: workflow.edges === null || workflow.edges === undefined ? '' : json(workflow.edges),
    otherConfig
  }
}

const list = (text: string): string[] => text.split(',').map((item) => item.trim()).filter((item) => item !== '')

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
  const triggerConfig: Record<string, unknown> = { ...draft.otherConfig }
  if (draft.triggerType === 'CRON') {
    if (draft.cronExpression.trim() !== '') triggerConfig.cronExpression = draft.cronExpression.trim()
    triggerConfig.timezone = draft.timezone.trim() === '' ? 'UTC' : draft.timezone.trim()
  }
  if (draft.triggerType === 'EVENT') triggerConfig.eventName = draft.eventName.trim()
  if (draft.triggerType === 'KEYWORD') Object.assign(triggerConfig, { keywords: list(draft.keywords), match: draft.match })
  return {
    name: draft.name,
    description: draft.description.trim() === '' ? null : draft.description,
    triggerType: draft.triggerType,
    triggerConfig,
    domain: draft.domain,
    tags: list(draft.tags),
    isActive: draft.isActive,
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
          </fieldset>
          <fieldset class='card'>
            <legend>Trigger</legend>
            <label for='wf-trigger'>Trigger type</label>
            <select id='wf-trigger' value={draft.triggerType} onChange={(e) => { set('triggerType', e.currentTarget.value as TriggerType) }}>
              {TRIGGER_TYPE_CHOICES.map((type) => <option key={type}>{type}</option>)}
            </select>
            {draft.triggerType === 'CRON' && (
              <>
                <label for='wf-cron'>Cron expression (5 fields, or 6 with seconds first)</label>
                <input id='wf-cron' class='mono' placeholder='0 9 * * 1-5' value={draft.cronExpression} onInput={(e) => { set('cronExpression', e.currentTarget.value) }} />
                <label for='wf-timezone'>Timezone (IANA)</label>
                <input id='wf-timezone' value={draft.timezone} onInput={(e) => { set('timezone', e.currentTarget.value) }} />
              </>
            )}
            {draft.triggerType === 'EVENT' && (
              <>
                <label for='wf-event'>Event name</label>
                <input id='wf-event' placeholder='client.created' value={draft.eventName} onInput={(e) => { set('eventName', e.currentTarget.value) }} />
              </>
            )}
            {draft.triggerType === 'KEYWORD' && (
              <>
                <label for='wf-keywords'>Keywords (comma-separated)</label>
                <input id='wf-keywords' value={draft.keywords} onInput={(e) => { set('keywords', e.currentTarget.value) }} />
                <label for='wf-match'>Match</label>
                <select id='wf-match' value={draft.match} onChange={(e) => { set('match', e.currentTarget.value) }}>
                  <option value='contains'>contains</option><option value='exact'>exact</option><option value='startsWith'>startsWith</option>
                </select>
              </>
            )}
            {draft.triggerType === 'WEBHOOK' && <p class='muted'>Its URL is shown once the workflow is saved.</p>}
            {(draft.triggerType === 'MANUAL' || draft.triggerType === 'AGENT') && <p class='muted'>Started by firing it, from its page or the API.</p>}
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
