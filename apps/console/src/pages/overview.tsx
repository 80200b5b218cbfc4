import { useLocation } from 'preact-iso'
import { api, ApiError } from '../api.ts'
import { RunsChart } from '../components/runs-chart.tsx'
import { ErrorNotice, Loading, PageTitle } from '../components/ui.tsx'
import { ago, clock, dateTime } from '../format.ts'
import { useAction, useData } from '../hooks.ts'
import { paths } from '../paths.ts'
import { chosenAccount, DEFAULT_ACCOUNT } from '../session.ts'
import type { RunSummary, WorkflowSummary } from '../types.ts'

/** The queue counters are read every 5 seconds (README, Queues). */
const QUEUES_EVERY_MS = 5000
const STATS_EVERY_MS = 15_000
const FAILED_SHOWN = 10
const APPROVALS_SHOWN = 10
/** The conversations whose drafts are counted: the api's largest page, newest first. */
const CONVERSATIONS_COUNTED = 500

const QUEUE_ROLES: Record<string, string> = {
  'workflow-runs': 'runs of every trigger but agents',
  'scheduled-tasks': 'cron ticks',
  'agent-execution': 'runs of AGENT workflows',
  'assistant-main': 'inbound chat deliveries'
}

function Queues () {
  const queues = useData(async () => ({ queues: await api.queues(), readAt: new Date().toISOString() }), [], QUEUES_EVERY_MS)
  return (
    <section class='card wide' aria-labelledby='queues-title'>
      <h2 id='queues-title'>Queues</h2>
      <p class='muted' aria-live='polite'>
        {queues.data === undefined ? 'Reading the counters…' : `Read every 5 s; last at ${clock(queues.data.readAt, true)}.`}
      </p>
      <ErrorNotice error={queues.error} />
      {queues.data !== undefined && (
        <div class='table-wrap'>
          <table id='queue-counters'>
            <thead>
              <tr><th scope='col'>Queue</th><th scope='col'>State</th><th scope='col' class='num'>Waiting</th><th scope='col' class='num'>Active</th><th scope='col' class='num'>Delayed</th><th scope='col' class='num'>Completed</th><th scope='col' class='num'>Failed</th></tr>
            </thead>
            <tbody>
              {queues.data.queues.map((queue) => (
                <tr key={queue.name} data-queue={queue.name} class={queue.error !== undefined ? 'degraded' : undefined}>
                  <th scope='row'>{queue.name}<div class='muted small'>{QUEUE_ROLES[queue.name]}</div></th>
                  <td>{queue.error === undefined ? <span class='badge ok'>OK</span> : <span class='badge degraded-badge' title={queue.error}>Degraded: {queue.error}</span>}</td>
                  <td class='num' data-counter='waiting'>{queue.waiting}</td>
                  <td class='num' data-counter='active'>{queue.active}</td>
                  <td class='num' data-counter='delayed'>{queue.delayed}</td>
                  <td class='num' data-counter='completed'>{queue.completed}</td>
                  <td class='num' data-counter='failed'>{queue.failed}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}

function Throughput () {
  const stats = useData(async () => api.runStats(60), [], STATS_EVERY_MS)
  return (
    <section class='card' aria-labelledby='throughput-title'>
      <h2 id='throughput-title'>Runs per minute, last hour</h2>
      <ErrorNotice error={stats.error} />
      {stats.data === undefined ? <Loading what='run counts' /> : <RunsChart stats={stats.data} />}
    </section>
  )
}

/** The workflows' names by id, for lists of runs that carry only the workflow's id. */
async function workflowNames (): Promise<Map<string, string>> {
  return new Map((await api.workflows({ limit: 500 })).map((workflow: WorkflowSummary) => [workflow.id, workflow.name]))
}

function Approvals () {
  const pending = useData(async () => {
    const [approvals, names] = await Promise.all([api.approvals(APPROVALS_SHOWN), workflowNames()])
    return { approvals, names }
  }, [], STATS_EVERY_MS)
  return (
    <section class='card' aria-labelledby='approvals-title'>
      <h2 id='approvals-title'>Waiting for a decision</h2>
      <p class='muted'>Runs waiting at an approval node, oldest first: open one to approve or reject.</p>
      <ErrorNotice error={pending.error} />
      {pending.data === undefined
        ? <Loading what='approvals' />
        : pending.data.approvals.length === 0
          ? <p>No run is waiting for a decision.</p>
          : (
            <ul class='approval-list'>
              {pending.data.approvals.map((approval) => (
                <li key={`${approval.runId}/${approval.nodeId}`} data-approval={approval.runId}>
                  <a href={paths.run(approval.runId)}>{approval.message ?? `Decide at ${approval.nodeId}`}</a>
                  <div class='muted small'>
                    {pending.data?.names.get(approval.workflowId) ?? approval.workflowId} · asked {ago(approval.createdAt)} · open until <time dateTime={approval.expiresAt}>{dateTime(approval.expiresAt)}</time>
                  </div>
                </li>
              ))}
            </ul>
            )}
    </section>
  )
}

/** `on: model X` / `off: why` from /health/ready, as a sentence. */
function assistantState (detail: string | undefined): string {
  if (detail === undefined) return 'Assistant: state unknown (this api does not say)'
  const on = /^on: model (.+)$/.exec(detail)
  return on === null ? `Assistant: ${detail}` : `Assistant: on (model ${on[1]})`
}

/** Whether the assistant is on, and the drafts it wrote that wait for staff in the inbox's account. */
function Assistant () {
  const readiness = useData(api.readiness, [])
  const accountId = chosenAccount() ?? DEFAULT_ACCOUNT
  const drafts = useData(async () => {
    try {
      const conversations = await api.conversations(accountId, {}, CONVERSATIONS_COUNTED)
      const waiting = conversations.filter((conversation) => conversation.pendingApprovalCount > 0)
      return { drafts: waiting.reduce((sum, conversation) => sum + conversation.pendingApprovalCount, 0), conversations: waiting.length }
    } catch (err) {
      // No chat account set up yet: nothing waits, nothing is broken.
      if (err instanceof ApiError && err.code === 'CHAT_ACCOUNT_NOT_FOUND') return null
      throw err
    }
  }, [accountId], STATS_EVERY_MS)
  return (
    <section class='card' aria-labelledby='assistant-title'>
      <h2 id='assistant-title'>Assistant</h2>
      <ErrorNotice error={readiness.error ?? drafts.error} />
      <p id='assistant-state'>{readiness.data === undefined ? 'Reading the assistant’s state…' : assistantState(readiness.data.details?.assistant)}</p>
      {drafts.data === undefined
        ? <Loading what='drafts' />
        : drafts.data === null
          ? <p class='muted'>No chat account is set up: no draft can wait.</p>
          : (
            <p id='drafts-waiting'>
              <strong>{drafts.data.drafts}</strong> {drafts.data.drafts === 1 ? 'draft' : 'drafts'} waiting for approval
              {drafts.data.conversations > 0 && <> in {drafts.data.conversations} {drafts.data.conversations === 1 ? 'conversation' : 'conversations'}: <a href={paths.inbox}>open the inbox</a></>}
              <span class='muted small'> (the inbox’s chat account; not archived conversations)</span>
            </p>
            )}
    </section>
  )
}

function FailedRuns () {
  const { route } = useLocation()
  const failed = useData(async () => {
    const since = new Date(Date.now() - 24 * 3600 * 1000).toISOString()
    const [runs, names] = await Promise.all([api.runs({ status: 'FAILED', since, limit: FAILED_SHOWN }), workflowNames()])
    return { runs, names }
  }, [], STATS_EVERY_MS)
  const retry = useAction(async (run: RunSummary) => {
    const { runId } = await api.fire(run.workflowId, run.triggerData ?? {})
    route(paths.run(runId))
  })
  return (
    <section class='card' aria-labelledby='failed-title'>
      <h2 id='failed-title'>Failed runs needing attention</h2>
      <p class='muted'>Runs that failed in the last 24 hours, newest first.</p>
      <ErrorNotice error={failed.error ?? retry.error} />
      {failed.data === undefined
        ? <Loading what='failed runs' />
        : failed.data.runs.length === 0
          ? <p>No run failed in the last 24 hours.</p>
          : (
            <ul class='failed-list'>
              {failed.data.runs.map((run) => (
                <li key={run.id}>
                  <div>
                    <a href={paths.run(run.id)}>{failed.data?.names.get(run.workflowId) ?? run.workflowId}</a>
                    <span class='muted'> · {ago(run.createdAt)}</span>
                  </div>
                  <div class='error-text'>{run.error}</div>
                  <button type='button' disabled={retry.busy} onClick={() => { retry.run(run) }} aria-label={`Retry the run of ${failed.data?.names.get(run.workflowId) ?? run.workflowId} from ${ago(run.createdAt)}`}>Retry</button>
                </li>
              ))}
            </ul>
            )}
    </section>
  )
}

export function Overview () {
  return (
    <section>
      <PageTitle>Overview</PageTitle>
      <div class='grid'>
        <Queues />
        <Approvals />
        <Assistant />
        <Throughput />
        <FailedRuns />
      </div>
    </section>
  )
}
