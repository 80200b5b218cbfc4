import { sql, type SQL } from 'drizzle-orm'
import type { FlowControl } from '../db/schema/workflows.ts'
import type { RunFlowControl } from '../db/schema/runs.ts'
import { renderTemplate } from '../engine/template.ts'

/** What a workflow's flowControl may hold (README, Flow control), and how long a rendered key may be. */
export const FLOW_CONTROL_BOUNDS = {
  keyTemplateChars: 500,
  keyChars: 200,
  concurrencyLimit: 1000,
  rateLimit: 10_000,
  ratePeriodSeconds: 86_400,
  debouncePeriodSeconds: 3600,
  debounceMaxWaitSeconds: 86_400,
  priority: { min: 1, max: 10 }
} as const

/** A key template rendered over the trigger's data: text, cut to 200 characters (a key that renders to nothing is ''). */
function renderKey (template: string, triggerData: unknown): string {
  const rendered = renderTemplate(template, { triggerData })
  const text = typeof rendered === 'string' ? rendered : rendered === undefined || rendered === null ? '' : JSON.stringify(rendered)
  return text.slice(0, FLOW_CONTROL_BOUNDS.keyChars)
}

/** A priority rendered: an integer from 1 to 10, else the lowest, 1. */
function renderPriority (value: number | string, triggerData: unknown): number {
  const rendered = typeof value === 'number' ? value : Number(renderTemplate(value, { triggerData }))
  const { min, max } = FLOW_CONTROL_BOUNDS.priority
  return Number.isInteger(rendered) && rendered >= min && rendered <= max ? rendered : min
}

/**
 * A new run's flow control: its workflow's keys and priority rendered over its trigger's data. A run
 * is never refused for them. A debounced run waits from the start; the others wait only when a limit holds them.
 */
export function renderFlowControl (flowControl: FlowControl, triggerData: unknown, now: Date): RunFlowControl {
  const { concurrency, rateLimit, debounce, priority } = flowControl
  return {
    ...(concurrency !== undefined && { concurrencyKey: renderKey(concurrency.key, triggerData) }),
    ...(rateLimit !== undefined && { rateKey: rateLimit.key === undefined ? '' : renderKey(rateLimit.key, triggerData) }),
    ...(debounce !== undefined && { debounceKey: renderKey(debounce.key, triggerData) }),
    ...(priority !== undefined && { priority: renderPriority(priority.value, triggerData) }),
    ...(priority?.key !== undefined && { priorityKey: renderKey(priority.key, triggerData) }),
    waitingFor: debounce === undefined ? null : 'debounce',
    since: debounce === undefined ? null : now.toISOString()
  }
}

/**
 * What a run shows of its flow control (README, Flow control): the key of what holds it (else its
 * concurrency key, else its first), what that is, and since when; null for a run started without one.
 */
export const shownFlowControl = sql<ShownFlowControl | null>`case when runs.flow_control is null then null else jsonb_build_object(
  'key', coalesce(case runs.flow_control->>'waitingFor' when 'rateLimit' then runs.flow_control->>'rateKey' when 'debounce' then runs.flow_control->>'debounceKey' end,
    runs.flow_control->>'concurrencyKey', runs.flow_control->>'rateKey', runs.flow_control->>'debounceKey', ''),
  'waitingFor', runs.flow_control->'waitingFor', 'since', runs.flow_control->'since') end`

export interface ShownFlowControl {
  key: string
  waitingFor: RunFlowControl['waitingFor']
  since: string | null
}

/**
 * A held job runs again this long after it was held if nothing woke it before: the wakes on
 * every slot freed and the reconciler's pass make this a last resort, so it is long enough that
 * thousands of held runs do not poll.
 */
export const HELD_RECHECK_MS = 5 * 60_000

/** Now as the ISO text a run's `flow_control.since` holds. */
export const isoNow = sql`to_jsonb(to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`

/** Whether a run's start is gated by its flow control (the in-memory start path leaves such runs to the claim). */
export const isGated = (flow: RunFlowControl | null): boolean =>
  flow !== null && (flow.concurrencyKey !== undefined || flow.rateKey !== undefined || flow.debounceKey !== undefined)

/**
 * A run's place in a line of waiting runs (README, Flow control): its creation time, a minute
 * earlier for each level of priority above 1. A run of priority 10 goes ahead of the lower ones
 * created up to 9 minutes before it, never of older ones: none waits behind later ones for ever.
 * `run` is a row with the run's `created_at` and `flow_control`.
 */
export const placeOf = (run: SQL): SQL =>
  sql`${run}.created_at - (coalesce((${run}.flow_control->>'priority')::int, 1) - 1) * interval '1 minute'`

/**
 * A run of a priority key waits in a line at least this long after the key's previous waiting run
 * (README, Flow control): a key that floods a line takes turns with the others instead of going first.
 */
export const FAIR_STEP = sql.raw('interval \'1 second\'')

/**
 * The place of a run (`run`, as `placeOf`) with a priority key in a line whose waiting runs of that key
 * were last placed at `lastPlace` (null: none): its own place, or one step after the key's last.
 */
export const fairPlaceOf = (run: SQL, lastPlace: SQL): SQL =>
  sql`case when ${run}.flow_control ? 'priorityKey' then greatest(${placeOf(run)}, coalesce((${lastPlace}) + ${FAIR_STEP}, '-infinity')) else ${placeOf(run)} end`
