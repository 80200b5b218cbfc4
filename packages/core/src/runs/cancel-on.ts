import type { EventMatch } from '../db/schema/event-listens.ts'
import type { CancelOn } from '../db/schema/workflows.ts'
import { renderedMatch } from '../engine/nodes/wait-for-event.ts'
import { renderTemplate } from '../engine/template.ts'

/** The most cancelOn rules a workflow holds (README, Events and waits). */
export const CANCEL_ON_MAX_RULES = 10

/** A cancelOn rule rendered for one run: the row of event_listens its start writes. */
export interface RunCancelRule {
  listener: string
  event: string
  match: EventMatch[]
}

/** A new run's cancelOn rules, their matches rendered over its trigger's data. */
export function renderCancelOn (cancelOn: readonly CancelOn[], triggerData: unknown): RunCancelRule[] {
  return cancelOn.slice(0, CANCEL_ON_MAX_RULES).map((rule, index) => ({
    listener: `cancelOn:${index}`,
    event: rule.event,
    match: renderedMatch(Object.fromEntries(Object.entries(rule.match ?? {}).map(([path, template]) => [path, renderTemplate(template, { triggerData })])))
  }))
}
