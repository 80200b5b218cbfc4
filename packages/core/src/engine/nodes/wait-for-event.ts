import { Type } from 'typebox'
import type { EventMatch } from '../../db/schema/event-listens.ts'
import { NodeError, type NodeResult } from '../types.ts'
import { optionalNumber } from './config.ts'
import { defineNode, PURE_TRAITS, templated } from './definition.ts'

const MINUTE_MS = 60_000
/** 3 seconds: a test's timeout; 366 days, as long as a wait. */
const MIN_TIMEOUT_MINUTES = 0.05
const MAX_TIMEOUT_MINUTES = 366 * 24 * 60
const DEFAULT_TIMEOUT_MINUTES = 24 * 60

/** What a `match` (here and in a workflow's cancelOn) may hold (README, Events and waits). */
export const EVENT_MATCH_BOUNDS = { entries: 20, pathChars: 200, pathSegments: 10, valueChars: 1000, eventChars: 200 } as const

/** A match's path: dot-separated keys (an array's items by their index), checked at save. */
export function matchPathError (path: string): string | undefined {
  const segments = path.split('.')
  if (path.length > EVENT_MATCH_BOUNDS.pathChars || segments.length > EVENT_MATCH_BOUNDS.pathSegments || segments.some((segment) => segment === '')) {
    return `match path ${JSON.stringify(path.slice(0, 50))} must be at most ${EVENT_MATCH_BOUNDS.pathSegments} dot-separated keys of ${EVENT_MATCH_BOUNDS.pathChars} characters in all`
  }
  return undefined
}

/** A match rendered: each path split into keys, each value as text (an event's value is compared as text). */
export function renderedMatch (match: Record<string, unknown>): EventMatch[] {
  return Object.entries(match).map(([path, value]) => ({
    path: path.split('.'),
    value: (typeof value === 'string' ? value : value === undefined || value === null ? '' : JSON.stringify(value)).slice(0, EVENT_MATCH_BOUNDS.valueChars)
  }))
}

/**
 * Waits for an event (README, Events and waits): the run is WAITING (no worker held) until an event
 * of `event`, of the workflow's owner, whose payload matches, committed since the node started (a
 * `POST /api/automation/events`, one of the service's own, a chat event), or until its timeout.
 * Re-entrant like every wait (engine/README.md, "Waits and resumes"): the first run of the node
 * writes the wait (engine/event-waits.ts), each later one reads it.
 */
export const waitForEvent = defineNode({
  type: 'wait_for_event',
  category: 'Flow',
  description: 'Waits until an event with a matching payload arrives (an order paid, a message received), or a timeout, without holding a worker.',
  config: {
    event: Type.String({ minLength: 1, maxLength: EVENT_MATCH_BOUNDS.eventChars, description: 'The event’s name: one posted to /api/automation/events, or one of the service’s own (workflow.run.failed, chat.message.received, …).' }),
    match: Type.Optional(Type.Record(Type.String(), templated(Type.String({ maxLength: EVENT_MATCH_BOUNDS.valueChars })), {
      maxProperties: EVENT_MATCH_BOUNDS.entries,
      description: 'Paths into the event’s payload (dot-separated) and the text each value must equal (templates rendered): `{"orderId": "{{triggerData.orderId}}"}`. Absent: any event of that name.'
    })),
    timeoutMinutes: Type.Optional(templated(Type.Number({ minimum: MIN_TIMEOUT_MINUTES, maximum: MAX_TIMEOUT_MINUTES, default: DEFAULT_TIMEOUT_MINUTES, description: 'How long to wait (3 seconds to 366 days).' }))),
    timedOut: Type.Optional(Type.String({ description: 'The node after no event in time; absent: the run ends.' }))
  },
  example: { event: 'order.paid', match: { orderId: '{{triggerData.orderId}}' }, timeoutMinutes: 60 },
  // A suspension is checkpointed like an outside effect; it has nothing to retry.
  traits: {
    ...PURE_TRAITS,
    pure: false,
    templateFields: ['match', 'timeoutMinutes'],
    links: [{ field: 'timedOut', kind: 'node' }],
    retries: { allowed: false }
  },
  validate (config) {
    for (const path of Object.keys((config.match ?? {}) as Record<string, unknown>)) {
      const error = matchPathError(path)
      if (error !== undefined) throw new Error(error)
    }
  },
  async execute ({ node, config, run, result, control, log }): Promise<NodeResult> {
    const now = Date.now()
    let wait = await control.eventWaits.get(run.id, node.id)
    if (wait === undefined) {
      const minutes = optionalNumber(config, 'timeoutMinutes', MIN_TIMEOUT_MINUTES, MAX_TIMEOUT_MINUTES) ?? DEFAULT_TIMEOUT_MINUTES
      const expiresAt = new Date(now + minutes * MINUTE_MS)
      const match = renderedMatch((config.match ?? {}) as Record<string, unknown>)
      wait = await control.eventWaits.open({ runId: run.id, nodeId: node.id, userId: run.userId, event: String(config.event), match, since: new Date(now), expiresAt })
      if (wait.event === null) {
        log('INFO', `Waiting for ${String(config.event)} until ${expiresAt.toISOString()}`)
        const waiting = { status: 'waiting', event: config.event, match: Object.fromEntries(match.map(({ path, value }) => [path.join('.'), value])), expiresAt: expiresAt.toISOString(), until: expiresAt.toISOString() }
        return { output: waiting, suspendUntil: expiresAt }
      }
    }
    if (wait.event === null && !wait.timedOut && wait.expiresAt.getTime() <= now) wait = await control.eventWaits.timeOut(run.id, node.id)
    if (wait === undefined) throw new NodeError('the event wait is gone')
    if (wait.event !== null) {
      log('INFO', `Event ${wait.event.name} ${wait.event.id} received`)
      return { output: wait.event, next: null, handles: ['next', 'received'] }
    }
    // Woken before its event or its time (another timer of the run): wait on.
    if (!wait.timedOut) return { output: result[node.id], suspendUntil: wait.expiresAt }
    log('INFO', `No ${String(config.event)} event in time`)
    const output = { reason: 'timeout', expiresAt: wait.expiresAt.toISOString() }
    return typeof config.timedOut === 'string' ? { output, next: config.timedOut, handles: ['timedOut', 'timeout'] } : { output, ends: true }
  }
})
