import { Fragment } from 'preact'
import { useState } from 'preact/hooks'
import { ago, dateTime, duration, firstLine } from '../format.ts'
import { paths } from '../paths.ts'
import { groupRuns, RUN_KIND_LABELS, runKind } from '../run-list.ts'
import type { RecentRun, RunSummary, WorkflowSummary } from '../types.ts'
import { StatusBadge } from './ui.tsx'

function RunCells ({ run }: { run: RecentRun }) {
  return (
    <>
      <td><StatusBadge status={run.status} /></td>
      <td><span title={dateTime(run.createdAt)}>{ago(run.createdAt)}</span></td>
      <td class='num'>{duration(run.durationMs)}</td>
    </>
  )
}

/** A workflow's latest runs as rows, on its own page. */
export function RunsTable ({ runs }: { runs: RecentRun[] }) {
  return (
    <div class='table-wrap'>
      <table class='runs'>
        <thead>
          <tr><th scope='col'>Run</th><th scope='col'>Status</th><th scope='col'>Created</th><th scope='col' class='num'>Duration</th></tr>
        </thead>
        <tbody>
          {runs.map((run) => (
            <tr key={run.id} data-run={run.id}>
              <th scope='row'><a href={paths.run(run.id)} class='mono'>{run.id}</a></th>
              <RunCells run={run} />
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

type ListedWorkflow = Pick<WorkflowSummary, 'name' | 'triggerType'>

interface RunListProps {
  runs: RunSummary[]
  /**
   * The runs page: a workflow column and a kind column (read from each workflow's trigger type), and
   * child runs grouped under their parent, collapsed. Absent: the runs as they come (a run's children).
   */
  workflows?: ReadonlyMap<string, ListedWorkflow>
}

/** What holds a run's start (README, Flow control), in words: `Waiting for its key's rate limit (order-12)`. */
export function waitingText ({ waitingFor, key }: NonNullable<RunSummary['flowControl']>): string {
  const what = waitingFor === 'concurrency' ? 'a slot of its key' : waitingFor === 'rateLimit' ? 'its key\'s rate limit' : 'its burst to settle'
  return `Waiting for ${what}${key === '' ? '' : ` (${key})`}`
}

/** Runs with their errors (the first line; the whole on hover). */
export function RunList ({ runs, workflows }: RunListProps) {
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set())
  const toggle = (id: string): void => {
    const next = new Set(expanded)
    if (!next.delete(id)) next.add(id)
    setExpanded(next)
  }
  /** `children`: the child runs grouped under it, if any; `nested`: it is one of them. */
  const row = (run: RunSummary, children: RunSummary[] = [], nested = false) => {
    const kind = workflows === undefined ? undefined : runKind(run, workflows.get(run.workflowId)?.triggerType)
    return (
      <tr key={run.id} data-run={run.id} class={nested ? 'child-run' : undefined}>
        <th scope='row'>
          <a href={paths.run(run.id)} class='mono'>{run.id}</a>
          {children.length > 0 && <ChildToggle id={run.id} count={children.length} open={expanded.has(run.id)} onToggle={toggle} />}
          {run.tags.length > 0 && (
            <span class='run-tags'>
              {run.tags.map((tag) => <a key={tag} class='tag' href={`${paths.runs}?${new URLSearchParams({ tag }).toString()}`} aria-label={`Runs tagged ${tag}`}>{tag}</a>)}
            </span>
          )}
        </th>
        {workflows !== undefined && <td><a href={paths.workflow(run.workflowId)}>{workflows.get(run.workflowId)?.name ?? run.workflowId}</a></td>}
        {kind !== undefined && (
          <td data-kind={kind}>
            {RUN_KIND_LABELS[kind]}
            {kind === 'retry' && <> of <a href={paths.run(run.retriedFrom!)} class='mono'>{run.retriedFrom}</a></>}
          </td>
        )}
        <RunCells run={run} />
        <td class='run-error'>
          {run.error !== null && <span class='error-text' title={run.error}>{firstLine(run.error)}</span>}
          {run.flowControl?.waitingFor != null && <span class='muted' data-waiting-for={run.flowControl.waitingFor}>{waitingText(run.flowControl)}</span>}
        </td>
      </tr>
    )
  }
  return (
    <div class='table-wrap'>
      <table class='runs'>
        <thead>
          <tr>
            <th scope='col'>Run</th>
            {workflows !== undefined && <><th scope='col'>Workflow</th><th scope='col'>Kind</th></>}
            <th scope='col'>Status</th><th scope='col'>Created</th><th scope='col' class='num'>Duration</th><th scope='col'>Error</th>
          </tr>
        </thead>
        <tbody>
          {workflows === undefined
            ? runs.map((run) => row(run))
            : groupRuns(runs).map((group) => (
              <Fragment key={group.id}>
                {group.run !== undefined
                  ? row(group.run, group.children)
                  : (
                    // The parent is on another page, or filtered out: its children are grouped under its id.
                    <tr data-parent-run={group.id} class='run-group'>
                      <th scope='row'>
                        <a href={paths.run(group.id)} class='mono'>{group.id}</a>
                        <ChildToggle id={group.id} count={group.children.length} open={expanded.has(group.id)} onToggle={toggle} />
                      </th>
                      <td colSpan={6} class='muted'>Parent run, not in this list</td>
                    </tr>
                    )}
                {expanded.has(group.id) && group.children.map((child) => row(child, [], true))}
              </Fragment>
            ))}
        </tbody>
      </table>
    </div>
  )
}

function ChildToggle ({ id, count, open, onToggle }: { id: string, count: number, open: boolean, onToggle: (id: string) => void }) {
  return (
    <button type='button' class='link-button child-toggle' aria-expanded={open} onClick={() => { onToggle(id) }}>
      <span aria-hidden='true'>{open ? '▾' : '▸'} </span>{count} child {count === 1 ? 'run' : 'runs'}
    </button>
  )
}
