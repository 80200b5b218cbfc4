import { ago, dateTime, duration } from '../format.ts'
import { paths } from '../paths.ts'
import type { RecentRun } from '../types.ts'
import { StatusBadge } from './ui.tsx'

/** Runs as rows; `workflowName` adds the workflow column (the run list), absent on a workflow's own page. */
export function RunsTable ({ runs, workflowName }: { runs: Array<RecentRun & { workflowId?: string }>, workflowName?: (id: string) => string }) {
  return (
    <div class='table-wrap'>
      <table class='runs'>
        <thead>
          <tr>
            <th scope='col'>Run</th>
            {workflowName !== undefined && <th scope='col'>Workflow</th>}
            <th scope='col'>Status</th><th scope='col'>Created</th><th scope='col' class='num'>Duration</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((run) => (
            <tr key={run.id} data-run={run.id}>
              <th scope='row'><a href={paths.run(run.id)} class='mono'>{run.id}</a></th>
              {workflowName !== undefined && run.workflowId !== undefined && <td><a href={paths.workflow(run.workflowId)}>{workflowName(run.workflowId)}</a></td>}
              <td><StatusBadge status={run.status} /></td>
              <td><span title={dateTime(run.createdAt)}>{ago(run.createdAt)}</span></td>
              <td class='num'>{duration(run.durationMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
