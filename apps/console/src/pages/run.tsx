import { useEffect, useState } from 'preact/hooks'
import { useLocation, useRoute } from 'preact-iso'
import { isFinished } from '@switchboard/core/db/values'
import { agentProgress, agentViewOf } from '../agent-steps.ts'
import { api } from '../api.ts'
import { AgentSteps } from '../components/agent-steps.tsx'
import { GraphView } from '../components/graph-view.tsx'
import { RunList, waitingText } from '../components/runs-table.tsx'
import { ErrorNotice, JsonBlock, Loading, PageTitle, StatusBadge } from '../components/ui.tsx'
import { ago, clock, dateTime, duration } from '../format.ts'
import { pathOf, statesOf, type NodeState } from '../graph.ts'
import { useAction, useData } from '../hooks.ts'
import { paths } from '../paths.ts'
import type { ApprovalDecision, PendingApproval, Run, RunLog, Workflow } from '../types.ts'

/** How often an unfinished run is read again; a finished one is not. */
const LIVE_MS = 1000
/** The approvals read per request while looking for this run's: the api's largest page. */
const APPROVALS_PAGE = 500
/** The child runs listed: the first page, newest first. */
const CHILDREN_SHOWN = 50
/** How often the children of an unfinished run are read again: their statuses move while it runs. */
const CHILDREN_EVERY_MS = 5000

/** `Node n1 completed in 12ms` / `Node n1 failed after 40ms: …`: the engine's own measure of the node. */
function nodeDuration (logs: RunLog[]): number | undefined {
  for (const log of logs) {
    const match = /^Node .+ (?:completed in|failed after) (\d+)ms/.exec(log.message)
    if (match !== null) return Number(match[1])
  }
  return undefined
}

/**
 * The approval this run waits for, if the viewer may decide it. The run does not say which node
 * it waits at; the pending approvals do, all of them oldest first, so they are read page by page.
 */
async function pendingApprovalOf (runId: string): Promise<PendingApproval | null> {
  for (let offset = 0; ; offset += APPROVALS_PAGE) {
    const page = await api.approvals(APPROVALS_PAGE, offset)
    const found = page.find((approval) => approval.runId === runId)
    if (found !== undefined) return found
    if (page.length < APPROVALS_PAGE) return null
  }
}

/** A foreach node's items, from its output while it waits (`{total, started, succeeded, failed}`) or once done. */
function itemProgress (output: unknown): string | undefined {
  if (typeof output !== 'object' || output === null) return undefined
  const { total, succeeded, failed } = output as Record<string, unknown>
  if (typeof total !== 'number' || typeof succeeded !== 'number' || typeof failed !== 'number') return undefined
  return `${succeeded + failed} done / ${failed} failed / ${total} total`
}

function LogLines ({ logs }: { logs: RunLog[] }) {
  return (
    <ol class='logs'>
      {logs.map((log) => (
        <li key={log.id} class={`log log-${log.level.toLowerCase()}`}>
          <time dateTime={log.createdAt}>{clock(log.createdAt, true)}</time> <span class='level'>{log.level}</span> {log.message}
        </li>
      ))}
    </ol>
  )
}

function NodeSection ({ run, nodeId, workflow, state }: { run: Run, nodeId: string, workflow: Workflow | undefined, state: NodeState | undefined }) {
  const logs = run.logs.filter((log) => log.nodeId === nodeId)
  const type = workflow?.nodes.find((node) => node.id === nodeId)?.type
  const took = nodeDuration(logs)
  const hasOutput = Object.hasOwn(run.result, nodeId)
  const progress = type === 'foreach' && hasOutput ? itemProgress(run.result[nodeId]) : undefined
  const agent = type === 'ai_agent' && hasOutput ? agentViewOf(run.result[nodeId]) : undefined
  return (
    <details class={`node-section node-${state ?? 'done'}`} data-node-section={nodeId}>
      <summary>
        <strong class='mono'>{nodeId}</strong>{type !== undefined && <span class='muted'> ({type})</span>}
        {' · '}{state === 'failed' ? 'failed' : state === 'current' ? (run.status === 'WAITING' ? 'waiting' : 'in progress') : 'completed'}
        {took !== undefined && ` in ${duration(took)}`}
        {progress !== undefined && <> · <span class='item-progress'>{progress}</span></>}
        {agent !== undefined && <> · <span class='agent-progress'>{agentProgress(agent)}</span></>}
      </summary>
      {agent !== undefined && <><h4>Steps</h4><AgentSteps view={agent} /></>}
      <h4>Output</h4>
      {hasOutput ? <JsonBlock value={run.result[nodeId]} label={`Output of ${nodeId}`} /> : <p class='muted'>No output.</p>}
      <h4>Log</h4>
      <LogLines logs={logs} />
    </details>
  )
}

/** What a wait_for_event node waits for, from its output while it waits (README, Events and waits). */
interface EventWait {
  nodeId: string
  event: string
  match: Record<string, string>
  expiresAt: string
}

function eventWaitOf (result: Record<string, unknown>): EventWait | undefined {
  for (const [nodeId, output] of Object.entries(result)) {
    const wait = output as { status?: unknown, event?: unknown, match?: unknown, expiresAt?: unknown } | null
    if (wait?.status === 'waiting' && typeof wait.event === 'string' && typeof wait.expiresAt === 'string') {
      return { nodeId, event: wait.event, match: (wait.match ?? {}) as Record<string, string>, expiresAt: wait.expiresAt }
    }
  }
  return undefined
}

function EventWaitPanel ({ wait }: { wait: EventWait }) {
  const conditions = Object.entries(wait.match)
  return (
    <section class='card approval' aria-labelledby='event-wait-title' id='event-wait'>
      <h2 id='event-wait-title'>Waiting for an event</h2>
      <p>
        At node <span class='mono'>{wait.nodeId}</span>: the event <span class='mono'>{wait.event}</span>
        {conditions.length === 0 ? ' (any payload)' : <> where {conditions.map(([path, value], i) => <span key={path}>{i > 0 && ' and '}<span class='mono'>{path}</span> is <span class='mono'>{JSON.stringify(value)}</span></span>)}</>},
        until <time dateTime={wait.expiresAt}>{dateTime(wait.expiresAt)}</time> ({ago(wait.expiresAt)}).
      </p>
    </section>
  )
}

function ApprovalPanel ({ approval, deciding, onDecide }: { approval: PendingApproval, deciding: boolean, onDecide: (decision: ApprovalDecision) => void }) {
  return (
    <section class='card approval' aria-labelledby='approval-title'>
      <h2 id='approval-title'>Waiting for a decision</h2>
      <p class='approval-message'>{approval.message ?? 'The workflow asks for a decision (no message given).'}</p>
      <p class='muted'>
        At node <span class='mono'>{approval.nodeId}</span>, asked {ago(approval.createdAt)}; open until <time dateTime={approval.expiresAt}>{dateTime(approval.expiresAt)}</time> ({ago(approval.expiresAt)}).
      </p>
      <div class='row'>
        <button type='button' class='primary' disabled={deciding} onClick={() => { onDecide('approve') }}>Approve</button>
        <button type='button' class='danger' disabled={deciding} onClick={() => { onDecide('reject') }}>Reject</button>
      </div>
    </section>
  )
}

function ChildRuns ({ run }: { run: Run }) {
  const children = useData(async () => api.runs({ parentRunId: run.id, limit: CHILDREN_SHOWN }), [run.id, run.childCount],
    !isFinished(run.status) ? CHILDREN_EVERY_MS : null)
  return (
    <section class='card wide' aria-labelledby='children-title'>
      <h2 id='children-title'>Child runs ({run.childCount})</h2>
      <p class='muted'>Started by this run's nodes (run_workflow, foreach, parallel, an ai_agent's tool calls){run.childCount > CHILDREN_SHOWN && `; the newest ${CHILDREN_SHOWN} are listed`}.</p>
      <ErrorNotice error={children.error} />
      {children.data === undefined ? <Loading what='child runs' /> : <RunList runs={children.data} />}
    </section>
  )
}

export function RunPage () {
  const { params } = useRoute()
  const { route } = useLocation()
  const id = params.id
  // Read every second until the run is finished; `finishedId` stops the polling for this run only.
  const [finishedId, setFinishedId] = useState<string | undefined>(undefined)
  const loaded = useData(async () => api.run(id), [id], finishedId === id ? null : LIVE_MS)
  const run = loaded.data?.id === id ? loaded.data : undefined
  useEffect(() => {
    if (run !== undefined && isFinished(run.status)) setFinishedId(run.id)
  }, [run?.id, run?.status])
  const workflowId = run?.workflowId
  const workflow = useData(async () => workflowId === undefined ? undefined : api.workflow(workflowId), [workflowId])
  // An approval node's output is `waiting` until decided: only then are the pending approvals read,
  // and again when the run moves on (a new log line), not on every poll. A wait_for_event's says the event.
  const eventWait = run?.status === 'WAITING' ? eventWaitOf(run.result) : undefined
  const undecided = run?.status === 'WAITING' && eventWait === undefined && Object.values(run.result).some((output) => (output as { status?: unknown } | null)?.status === 'waiting')
  const approvalLoad = useData(async () => undecided ? pendingApprovalOf(id) : null, [id, undecided, run?.logs.length])
  const approval = approvalLoad.data?.runId === id ? approvalLoad.data : undefined
  const decide = useAction(async (pending: PendingApproval, decision: ApprovalDecision) => {
    try {
      await api.resumeRun(pending.runId, pending.nodeId, decision)
    } finally {
      // Decided here or not (409: decided elsewhere, timed out, ended), the page shows where the run is now.
      loaded.reload()
      approvalLoad.reload()
    }
  })
  const cancel = useAction(async () => {
    await api.cancelRun(id)
    loaded.reload()
  })
  const retry = useAction(async () => {
    if (run === undefined) return
    const { runId } = await api.fire(run.workflowId, run.triggerData ?? {})
    route(paths.run(runId))
  })

  if (run === undefined) {
    return loaded.error === undefined ? <Loading what='the run' /> : <><PageTitle>Run</PageTitle><ErrorNotice error={loaded.error} /></>
  }
  const unfinished = !isFinished(run.status)
  const path = pathOf(run.logs)
  const states = statesOf(run, path)
  const runLogs = run.logs.filter((log) => log.nodeId === null)
  return (
    <section>
      <PageTitle actions={
        <>
          {unfinished && <button type='button' class='danger' disabled={cancel.busy} onClick={() => { cancel.run() }}>Cancel run</button>}
          <button type='button' disabled={retry.busy} onClick={() => { retry.run() }} title='Fires the workflow again with the same trigger data'>Retry</button>
        </>
      }
      >Run <span class='mono'>{run.id}</span>
      </PageTitle>
      <p class='run-status' aria-live='polite'>
        <StatusBadge status={run.status} />
        {unfinished && <span class='muted'> live: updated every second</span>}
      </p>
      <ErrorNotice error={loaded.error ?? decide.error ?? cancel.error ?? retry.error} />
      {eventWait !== undefined && <EventWaitPanel wait={eventWait} />}
      {approval !== undefined && <ApprovalPanel approval={approval} deciding={decide.busy} onDecide={(decision) => { decide.run(approval, decision) }} />}
      <div class='grid'>
        <section class='card' aria-labelledby='facts-title'>
          <h2 id='facts-title'>Timings</h2>
          <dl class='facts'>
            <dt>Workflow</dt><dd><a href={paths.workflow(run.workflowId)}>{workflow.data?.name ?? run.workflowId}</a></dd>
            {run.parentRunId !== null && <><dt>Parent run</dt><dd><a href={paths.run(run.parentRunId)} class='mono' id='parent-run'>{run.parentRunId}</a></dd></>}
            <dt>Created</dt><dd>{dateTime(run.createdAt)}</dd>
            <dt>Started</dt><dd>{dateTime(run.startedAt)}</dd>
            <dt>Completed</dt><dd>{dateTime(run.completedAt)}</dd>
            <dt>Duration</dt><dd id='run-duration'>{duration(run.durationMs)}</dd>
            {run.flowControl !== null && (
              <><dt>Flow control</dt>
                <dd id='run-flow-control'>
                  {run.flowControl.waitingFor === null ? <>key <span class='mono'>{run.flowControl.key === '' ? '(empty)' : run.flowControl.key}</span></> : <>{waitingText(run.flowControl)} since {dateTime(run.flowControl.since)}</>}
                </dd>
              </>
            )}
            {run.tags.length > 0 && <><dt>Tags</dt><dd>{run.tags.map((tag) => <a key={tag} class='tag' href={`${paths.runs}?${new URLSearchParams({ tag }).toString()}`}>{tag}</a>)}</dd></>}
            {run.error !== null && <><dt>Error</dt><dd class='error-text'>{run.error}</dd></>}
          </dl>
        </section>
        <section class='card' aria-labelledby='trigger-data-title'>
          <h2 id='trigger-data-title'>Trigger data</h2>
          <JsonBlock value={run.triggerData} label='Trigger data' />
        </section>
        <section class='card wide' aria-labelledby='path-title'>
          <h2 id='path-title'>Path taken</h2>
          {workflow.data === undefined
            ? <ErrorNotice error={workflow.error} />
            : <GraphView nodes={workflow.data.nodes} edges={workflow.data.edges} path={path} states={states} />}
          <p class='muted'>{path.length === 0 ? 'No node has run yet.' : `Through ${path.join(' → ')}`}</p>
          <a class='button' href={`${paths.builder(run.workflowId)}?run=${encodeURIComponent(run.id)}`}>Open on the canvas</a>
        </section>
        <section class='card wide' aria-labelledby='nodes-title'>
          <h2 id='nodes-title'>Nodes</h2>
          {path.length === 0 ? <p class='muted'>No node has run yet.</p> : path.map((nodeId) => <NodeSection key={nodeId} run={run} nodeId={nodeId} workflow={workflow.data} state={states.get(nodeId)} />)}
        </section>
        {run.childCount > 0 && <ChildRuns key={run.id} run={run} />}
        <section class='card wide' aria-labelledby='run-log-title'>
          <h2 id='run-log-title'>Run log</h2>
          <LogLines logs={runLogs} />
        </section>
      </div>
    </section>
  )
}
