import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { optionalNumber, optionalString } from './config.ts'
import { defineNode, PURE_TRAITS, templated } from './definition.ts'

const UNIT_MS = { seconds: 1000, minutes: 60_000, hours: 3_600_000, days: 86_400_000 } as const
const MAX_WAIT_MS = 366 * UNIT_MS.days

function untilFromConfig (config: Record<string, unknown>, now: number): Date {
  const until = optionalString(config, 'until')
  if (until !== undefined) {
    const time = Date.parse(until)
    if (Number.isNaN(time)) throw new NodeError(`until is not a valid time: ${until}`)
    if (time - now > MAX_WAIT_MS) throw new NodeError('until is more than 366 days ahead')
    return new Date(time)
  }
  let total: number | undefined
  for (const [unit, ms] of Object.entries(UNIT_MS)) {
    const amount = optionalNumber(config, unit, 0, MAX_WAIT_MS / ms)
    if (amount !== undefined) total = (total ?? 0) + amount * ms
  }
  if (total === undefined) throw new NodeError('wait needs seconds, minutes, hours, days or until')
  if (total > MAX_WAIT_MS) throw new NodeError('wait is longer than 366 days')
  return new Date(now + total)
}

/**
 * A long wait does not hold a worker: the first time the node runs it stores
 * `until` and suspends the run (WAITING, resumed by a delayed job); when the
 * run resumes the node runs again, finds its own `until` and completes.
 */
const amount = (unit: keyof typeof UNIT_MS) =>
  Type.Optional(templated(Type.Number({ minimum: 0, maximum: MAX_WAIT_MS / UNIT_MS[unit], description: `${unit[0]!.toUpperCase()}${unit.slice(1)} to wait (added to the other units).` })))

export const wait = defineNode({
  type: 'wait',
  category: 'Logic',
  description: 'Pauses the run for a time or until a moment (up to 366 days) without holding a worker.',
  config: {
    seconds: amount('seconds'),
    minutes: amount('minutes'),
    hours: amount('hours'),
    days: amount('days'),
    until: Type.Optional(templated(Type.String({ format: 'date-time', description: 'A moment to wait for (ISO 8601); instead of the units.' })))
  },
  example: { minutes: 5 },
  // A suspension is checkpointed like an outside effect; it has nothing to retry and no time limit.
  traits: { ...PURE_TRAITS, pure: false, retries: { allowed: false } },
  async execute ({ node, config, result }) {
    const now = Date.now()
    const stored = result[node.id] as { until?: unknown } | undefined
    const until = typeof stored?.until === 'string' ? new Date(stored.until) : untilFromConfig(config, now)
    if (until.getTime() > now) return { output: { until: until.toISOString() }, suspendUntil: until }
    return { output: { until: until.toISOString(), resumedAt: new Date(now).toISOString() } }
  }
})
