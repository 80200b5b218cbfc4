import { DateTime, IANAZone, type DurationLikeObject } from 'luxon'
import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { optionalChoice, optionalString, requiredChoice } from './config.ts'
import { defineNode, oneOfAnyCase, PURE_TRAITS, templated } from './definition.ts'
import { kindOf } from './items.ts'

const OPERATIONS = ['format', 'parse', 'add', 'subtract', 'difference', 'now'] as const
const UNITS = ['milliseconds', 'seconds', 'minutes', 'hours', 'days', 'weeks', 'months', 'years'] as const
/** Years and months have no fixed length: whole ones only. */
const AMOUNT_UNITS = { years: true, months: true, weeks: false, days: false, hours: false, minutes: false, seconds: false } as const
type AmountUnit = keyof typeof AMOUNT_UNITS
const AMOUNT_MAX = 1_000_000
const FORMAT_MAX_LENGTH = 200
const VALUE_MAX_LENGTH = 1000
const DEFAULT_TIMEZONE = 'UTC'
/** Month and day names in one language, whatever the machine's: a format gives the same text on every worker. */
const LOCALE = 'en-US'

const isTemplate = (value: unknown): boolean => typeof value === 'string' && value.includes('{{')

function readTimezone (config: Record<string, unknown>): string {
  const timezone = optionalString(config, 'timezone') ?? DEFAULT_TIMEZONE
  if (!IANAZone.isValidZone(timezone)) throw new NodeError(`timezone is not an IANA time zone (Europe/Paris, UTC): ${timezone.slice(0, 100)}`)
  return timezone
}

function readFormat (config: Record<string, unknown>): string | undefined {
  const format = optionalString(config, 'format')
  if (format !== undefined && format.length > FORMAT_MAX_LENGTH) throw new NodeError(`format is longer than ${FORMAT_MAX_LENGTH} characters`)
  return format
}

/** Why luxon refused a date, in its words (after arithmetic it gives no explanation). */
const reasonOf = (moment: DateTime): string =>
  [moment.invalidReason, moment.invalidExplanation].filter((part) => typeof part === 'string' && part !== '').join(': ')

/**
 * A moment from ISO 8601 text or epoch milliseconds, or, with `format`, from text in that format
 * (luxon's tokens); text without an offset is in `zone`.
 */
function readMoment (config: Record<string, unknown>, field: string, zone: string, format?: string): DateTime {
  const value = config[field]
  let moment: DateTime
  if (typeof value === 'number') {
    moment = DateTime.fromMillis(value, { zone, locale: LOCALE })
  } else if (typeof value === 'string' && value !== '') {
    if (value.length > VALUE_MAX_LENGTH) throw new NodeError(`${field} is longer than ${VALUE_MAX_LENGTH} characters`)
    moment = format === undefined
      ? DateTime.fromISO(value, { zone, locale: LOCALE })
      : DateTime.fromFormat(value, format, { zone, locale: LOCALE })
  } else {
    throw new NodeError(`${field} must be a date (ISO 8601 text or epoch milliseconds), but it is ${kindOf(value)}`)
  }
  if (!moment.isValid) throw new NodeError(`${field} is not a valid date${format === undefined ? '' : ` in the format ${format}`}: ${reasonOf(moment)}`)
  return moment
}

function readAmount (config: Record<string, unknown>): DurationLikeObject {
  const { amount } = config
  if (typeof amount !== 'object' || amount === null || Array.isArray(amount)) {
    throw new NodeError(`amount must be an object of ${Object.keys(AMOUNT_UNITS).join(', ')}, but it is ${kindOf(amount)}`)
  }
  const duration: DurationLikeObject = {}
  for (const [unit, written] of Object.entries(amount)) {
    if (!Object.hasOwn(AMOUNT_UNITS, unit)) throw new NodeError(`amount.${unit.slice(0, 64)} is not a unit: use ${Object.keys(AMOUNT_UNITS).join(', ')}`)
    if (written === undefined || written === null || written === '') continue
    const number = typeof written === 'string' ? Number(written) : written
    const whole = AMOUNT_UNITS[unit as AmountUnit]
    if (typeof number !== 'number' || !Number.isFinite(number) || Math.abs(number) > AMOUNT_MAX || (whole && !Number.isInteger(number))) {
      throw new NodeError(`amount.${unit} must be ${whole ? 'a whole number' : 'a number'} from -${AMOUNT_MAX} to ${AMOUNT_MAX}`)
    }
    duration[unit as AmountUnit] = number
  }
  return duration
}

function iso (moment: DateTime, what: string): string {
  const text = moment.isValid ? moment.toISO() : null
  if (text === null) throw new NodeError(`${what} is out of range: ${reasonOf(moment)}`)
  return text
}

const amountField = (unit: AmountUnit) => {
  const bounds = { minimum: -AMOUNT_MAX, maximum: AMOUNT_MAX, description: `${unit[0]!.toUpperCase()}${unit.slice(1)} (negative: the other way).` }
  return Type.Optional(templated(AMOUNT_UNITS[unit] ? Type.Integer(bounds) : Type.Number(bounds)))
}

const dateValue = (description: string) =>
  Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: VALUE_MAX_LENGTH }), Type.Number()], { description }))

/**
 * Dates with luxon. `now` reads the clock, so a run taken over after a crash may get another time
 * when it runs the node again; it is still pure: its output is checkpointed before any outside
 * effect uses it (the `pure` trait, ./definition.ts).
 */
export const date = defineNode({
  type: 'date',
  category: 'Data',
  description: 'Formats, parses, shifts and compares dates and times (luxon), in an IANA time zone.',
  config: {
    operation: templated(oneOfAnyCase(OPERATIONS, {
      description: 'format: value as text in format; parse: value (in format, if given) as ISO 8601; add, subtract: value shifted by amount; difference: from value to to (default now) in unit; now: the current time.'
    })),
    value: dateValue('The date: ISO 8601 text, epoch milliseconds, or for parse text in format.'),
    format: Type.Optional(Type.String({ minLength: 1, maxLength: FORMAT_MAX_LENGTH, description: 'Luxon format tokens (yyyy-MM-dd HH:mm): the output of format, the input of parse.' })),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 100, default: DEFAULT_TIMEZONE, description: 'The IANA time zone (Europe/Paris) of text without an offset and of the output.' })),
    amount: Type.Optional(Type.Object(
      Object.fromEntries(Object.keys(AMOUNT_UNITS).map((unit) => [unit, amountField(unit as AmountUnit)])),
      { additionalProperties: false, description: 'For add and subtract: calendar units in timezone (a day across a change of clocks is 23 or 25 hours).' }
    )),
    to: dateValue('For difference: the later date (ISO 8601 or epoch milliseconds); default now.'),
    unit: Type.Optional(templated(oneOfAnyCase(UNITS, { default: 'milliseconds', description: 'For difference: the unit of the number (fractional where the difference is).' })))
  },
  example: { operation: 'add', value: '{{triggerData.createdAt}}', amount: { days: 7 }, timezone: 'Europe/Paris' },
  traits: PURE_TRAITS,
  validate (config) {
    const { operation, timezone, format, amount } = config
    if (typeof timezone === 'string' && !isTemplate(timezone) && !IANAZone.isValidZone(timezone)) {
      throw new Error(`timezone is not an IANA time zone (Europe/Paris, UTC): ${timezone.slice(0, 100)}`)
    }
    const op = typeof operation === 'string' ? operation.toLowerCase() : undefined
    if (op === 'format' && (format === undefined || format === null)) throw new Error('format is required to format a date')
    if ((op === 'add' || op === 'subtract') && (amount === undefined || amount === null)) throw new Error(`amount is required to ${op}`)
  },
  async execute ({ config }) {
    const operation = requiredChoice(config, 'operation', OPERATIONS)
    const zone = readTimezone(config)
    const format = readFormat(config)
    switch (operation) {
      case 'now':
        return { output: { value: iso(DateTime.now().setZone(zone), 'now') } }
      case 'parse':
        return { output: { value: iso(readMoment(config, 'value', zone, format), 'value') } }
      case 'format': {
        if (format === undefined) throw new NodeError('format is required to format a date')
        return { output: { value: readMoment(config, 'value', zone).toFormat(format) } }
      }
      case 'add':
      case 'subtract': {
        const moment = readMoment(config, 'value', zone)
        const amount = readAmount(config)
        return { output: { value: iso(operation === 'add' ? moment.plus(amount) : moment.minus(amount), `value ${operation === 'add' ? 'plus' : 'minus'} amount`) } }
      }
      case 'difference': {
        const from = readMoment(config, 'value', zone)
        const to = config.to === undefined || config.to === null || config.to === '' ? DateTime.now().setZone(zone) : readMoment(config, 'to', zone)
        const unit = optionalChoice(config, 'unit', UNITS) ?? 'milliseconds'
        return { output: { value: to.diff(from, unit).get(unit) } }
      }
    }
  }
})
