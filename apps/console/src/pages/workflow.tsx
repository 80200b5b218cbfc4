import { useState } from 'preact/hooks'
import { useLocation, useRoute } from 'preact-iso'
import { api } from '../api.ts'
import { GraphView } from '../components/graph-view.tsx'
import { RunsTable } from '../components/runs-table.tsx'
import { CopyField, ErrorNotice, Loading, PageTitle } from '../components/ui.tsx'
import { ago, dateTime } from '../format.ts'
import { useAction, useData } from '../hooks.ts'
import { paths, webhookUrl } from '../paths.ts'
import type { Workflow } from '../types.ts'

const REFRESH_MS = 5000

function Trigger ({ workflow }: { workflow: Workflow }) {
  const config = workflow.triggerConfig
  switch (workflow.triggerType) {
    case 'WEBHOOK':
      return (
        <>
          <CopyField id='webhook-url' label='Webhook URL (POST any body; public, no token)' value={webhookUrl(workflow.id)} />
          {!workflow.isActive && <p class='muted'>Inactive: calls are answered <code>ignored</code> until it is activated.</p>}
        </>
      )
    case 'CRON': {
      const schedule = workflow.schedules[0]
      return (
        <dl class='facts'>
          <dt>Cron expression</dt><dd class='mono'>{typeof config.cronExpression === 'string' ? config.cronExpression : 'none (a draft: never scheduled)'}</dd>
          <dt>Timezone</dt><dd>{typeof config.timezone === 'string' ? config.timezone : 'UTC'}</dd>
          <dt>Next run</dt><dd id='next-run'>{schedule === undefined ? (workflow.isActive ? 'not scheduled' : 'not scheduled: inactive') : `${dateTime(schedule.nextRunAt)} (${ago(schedule.nextRunAt)})`}</dd>
          <dt>Last tick</dt><dd>{dateTime(schedule?.lastRunAt)}</dd>
        </dl>
      )
    }
    case 'EVENT':
      return <p>Starts on the event <code>{String(config.eventName ?? '')}</code> (<code>POST /api/automation/events</code> with that <code>name</code>, or the service's own events).</p>
    case 'KEYWORD':
      return <p>Starts when an inbound chat message {String(config.match ?? 'contains')} one of: {Array.isArray(config.keywords) ? config.keywords.map((keyword) => <code key={String(keyword)} class='tag'>{String(keyword)}</code>) : 'no keywords'}.</p>
    default:
      return <p>Started by hand: fire it below (or <code>POST /api/automation/workflows/{workflow.id}/fire</code>).</p>
  }
}

function Fire ({ workflow }: { workflow: Workflow }) {
  const { route } = useLocation()
  const [payload, setPayload] = useState('{}')
  const fire = useAction(async () => {
    let triggerData: unknown
    try {
      triggerData = JSON.parse(payload)
    } catch (err) {
      throw new Error(`The payload is not JSON: ${(err as Error).message}`)
    }
    const { runId } = await api.fire(workflow.id, triggerData)
    route(paths.run(runId))
  })
  return (
    <form onSubmit={(event) => { event.preventDefault(); fire.run() }}>
      <label for='fire-payload'>Trigger data (JSON): available to nodes as <code>{'{{triggerData…}}'}</code></label>
      <textarea id='fire-payload' class='mono' rows={5} value={payload} onInput={(e) => { setPayload(e.currentTarget.value) }} spellcheck={false} />
      <ErrorNotice error={fire.error} />
      <button type='submit' class='primary' disabled={fire.busy || !workflow.isActive}>{fire.busy ? 'Firing…' : 'Fire'}</button>
      {!workflow.isActive && <span class='muted'> Activate the workflow to fire it.</span>}
    </form>
  )
}

export function WorkflowPage () {
  const { params } = useRoute()
  const { route } = useLocation()
  const id = params.id
  const loaded = useData(async () => api.workflow(id), [id], REFRESH_MS)
  const toggle = useAction(async (isActive: boolean) => {
    await api.updateWorkflow(id, { isActive })
    loaded.reload()
  })
  const remove = useAction(async () => {
    await api.deleteWorkflow(id)
    route(paths.workflows)
  })
  const workflow = loaded.data
  if (workflow === undefined) {
    return loaded.error === undefined ? <Loading what='the workflow' /> : <><PageTitle>Workflow</PageTitle><ErrorNotice error={loaded.error} /></>
  }
  return (
    <section>
      <PageTitle actions={
        <>
          <a class='button primary' href={paths.builder(id)}>Open in the builder</a>
          <a class='button' href={paths.editWorkflow(id)}>Edit</a>
          <button type='button' disabled={toggle.busy} onClick={() => { toggle.run(!workflow.isActive) }}>{workflow.isActive ? 'Deactivate' : 'Activate'}</button>
          <button type='button' class='danger' disabled={remove.busy} onClick={() => { if (confirm(`Delete the workflow “${workflow.name}” and all its runs?`)) remove.run() }}>Delete</button>
        </>
      }
      >{workflow.name}
      </PageTitle>
      <p class='badges'>
        {workflow.isActive ? <span class='badge ok' id='workflow-state'>Active</span> : <span class='badge off' id='workflow-state'>Inactive</span>}
        <span class='badge'>{workflow.triggerType}</span><span class='badge'>{workflow.domain}</span>
        {workflow.tags.map((tag) => <span key={tag} class='tag'>{tag}</span>)}
      </p>
      {workflow.description !== null && <p>{workflow.description}</p>}
      <ErrorNotice error={loaded.error ?? toggle.error ?? remove.error} />
      <div class='grid'>
        <section class='card' aria-labelledby='trigger-title'>
          <h2 id='trigger-title'>Trigger: {workflow.triggerType}</h2>
          <Trigger workflow={workflow} />
        </section>
        <section class='card' aria-labelledby='fire-title'>
          <h2 id='fire-title'>Fire</h2>
          <Fire workflow={workflow} />
        </section>
        <section class='card wide' aria-labelledby='graph-title'>
          <h2 id='graph-title'>Graph</h2>
          <GraphView nodes={workflow.nodes} edges={workflow.edges} />
        </section>
        <section class='card wide' aria-labelledby='latest-title'>
          <h2 id='latest-title'>Latest runs</h2>
          <p class='muted'>
            {workflow.runCount} runs, {workflow.successCount} succeeded, {workflow.failureCount} failed.{' '}
            <a href={`${paths.runs}?workflowId=${encodeURIComponent(workflow.id)}`}>All runs of this workflow</a>
          </p>
          {workflow.runs.length === 0 ? <p>No run yet.</p> : <RunsTable runs={workflow.runs} />}
        </section>
      </div>
    </section>
  )
}
