import type { RunSummary, TriggerType } from './types.ts'
import { isRecord } from './records.ts'

/**
 * How a run started, for the runs list. A run summary does not say it outright: a child, a replay and
 * a test run are marked, and the rest is read from the workflow's trigger type and the shape of the
 * triggerData the trigger wrote, which a fire of the same workflow with another body does not have.
 */
export type RunKind = 'child' | 'retry' | 'test' | 'webhook' | 'cron' | 'chat' | 'event' | 'assistant' | 'fire' | 'unknown'

export const RUN_KIND_LABELS: Record<RunKind, string> = {
  child: 'Child run',
  retry: 'Retry',
  test: 'Test',
  webhook: 'Webhook',
  cron: 'Cron',
  chat: 'Chat',
  event: 'Event',
  assistant: 'Assistant',
  fire: 'Manual fire',
  unknown: 'Unknown'
}

/** `triggerType`: the run's workflow's, undefined when the workflow is not listed. */
export function runKind (run: Pick<RunSummary, 'parentRunId' | 'retriedFrom' | 'test' | 'triggerData'>, triggerType: TriggerType | undefined): RunKind {
  if (run.parentRunId !== null) return 'child'
  if (run.retriedFrom !== null) return 'retry'
  if (run.test) return 'test'
  const data: Record<string, unknown> = isRecord(run.triggerData) ? run.triggerData : {}
  switch (triggerType) {
    // The inbound webhook's {body, headers, query}; the scheduler's tick.
    case 'WEBHOOK': return isRecord(data.headers) && isRecord(data.query) && 'body' in data ? 'webhook' : 'fire'
    case 'CRON': return typeof data.scheduledAt === 'string' && typeof data.cronExpression === 'string' ? 'cron' : 'fire'
    // A customer's message carries its wamid.
    case 'KEYWORD': return typeof data.wamid === 'string' ? 'chat' : 'fire'
    case 'EVENT': return typeof data.wamid === 'string' ? 'chat' : 'event'
    case 'AGENT': return 'assistant'
    case 'MANUAL': return 'fire'
    case undefined: return 'unknown'
  }
}

/**
 * A run of the list with the child runs listed beside it. `run` is undefined when the parent is not
 * in the list (another page, another filter): its children are grouped under its id all the same.
 */
export interface RunGroup<R> {
  id: string
  run: R | undefined
  children: R[]
}

/**
 * The runs as groups, each child run under the topmost of its ancestors the list holds, in the list's
 * order: a group stands where its parent does, or where its first child does when the parent is not listed.
 */
export function groupRuns<R extends Pick<RunSummary, 'id' | 'parentRunId'>> (runs: readonly R[]): Array<RunGroup<R>> {
  const byId = new Map(runs.map((run) => [run.id, run]))
  const groups = new Map<string, RunGroup<R>>()
  const position = new Map<string, number>()
  runs.forEach((run, at) => {
    let top = run
    // Depth is bounded (SUBWORKFLOW_MAX_DEPTH), and a run is never its own ancestor.
    for (let parent = byId.get(top.parentRunId ?? ''); parent !== undefined; parent = byId.get(top.parentRunId ?? '')) top = parent
    const listed = top.parentRunId === null
    const id = listed ? top.id : top.parentRunId!
    const group = groups.get(id) ?? { id, run: listed ? top : undefined, children: [] }
    groups.set(id, group)
    if (run !== group.run) group.children.push(run)
    if (run === group.run || (!listed && !position.has(id))) position.set(id, at)
  })
  return [...groups.values()].sort((one, other) => position.get(one.id)! - position.get(other.id)!)
}
