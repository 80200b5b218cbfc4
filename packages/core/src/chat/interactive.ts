import { storableJson } from '../db/storable.ts'
import type { ChatMessageDetails } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import type { FlowAction, FlowContent, InteractiveContent } from './client.ts'

/**
 * The platform's limits of an interactive message (characters, counts): sends over them are
 * refused here, before the platform is called, with a message naming the limit.
 */
export const INTERACTIVE_LIMITS = {
  body: 1024,
  header: 60,
  footer: 60,
  buttons: 3,
  buttonId: 256,
  buttonTitle: 20,
  listButton: 20,
  sections: 10,
  sectionTitle: 24,
  rows: 10,
  rowId: 200,
  rowTitle: 24,
  rowDescription: 72,
  /** The platform advises at most 30 characters, no emoji, on a flow's button. */
  flowCta: 30,
  flowId: 64,
  flowName: 200,
  flowScreen: 100,
  flowToken: 512,
  /** A flow's first-screen data: its JSON's bytes and nesting (ours: the platform states none). */
  flowDataBytes: 10 * 1024,
  flowDataDepth: 10
} as const

export const INTERACTIVE_TYPES = ['button', 'list', 'flow'] as const

/** How a flow opens: at a screen (`navigate`), or by asking the flow's endpoint for its first screen (`data_exchange`). */
export const FLOW_ACTIONS = ['navigate', 'data_exchange'] as const

/**
 * A completed flow's `response_json` is kept up to these bounds (README, Flows): past them the
 * reply keeps `response: {}` and `unreadable` says why, so a hostile reply is stored and shown, never retried.
 */
const FLOW_REPLY_LIMITS = { bytes: 64 * 1024, depth: 20 } as const

export type FlowReply = NonNullable<ChatMessageDetails['flowReply']>

/** A tap the customer made: a reply button, a list row, or a template's quick reply button (`id` is its payload). */
export interface InteractiveReply {
  type: 'button_reply' | 'list_reply' | 'quick_reply'
  id: string
  title: string
}

const invalid = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

function text (value: unknown, field: string, max: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) throw invalid(`${field} must be 1 to ${max} characters`)
  return value
}

/** Absent, null or empty (a template that rendered nothing) is not given. */
const given = (value: unknown): boolean => value !== undefined && value !== null && value !== ''

const optionalText = (value: unknown, field: string, max: number): string | undefined =>
  given(value) ? text(value, field, max) : undefined

function uniqueIds (ids: string[], field: (i: number) => string): void {
  const seen = new Map<string, number>()
  ids.forEach((id, i) => {
    const first = seen.get(id)
    if (first !== undefined) throw invalid(`${field(i)}.id repeats ${field(first)}.id: ids must be unique`)
    seen.set(id, i)
  })
}

function buttonsOf (value: unknown): InteractiveContent['buttons'] {
  const { buttons: max, buttonId, buttonTitle } = INTERACTIVE_LIMITS
  if (!Array.isArray(value) || value.length === 0 || value.length > max) throw invalid(`buttons must hold 1 to ${max} buttons`)
  const buttons = value.map((button: unknown, i) => {
    if (!isRecord(button)) throw invalid(`buttons[${i}] must be an object with id and title`)
    return { id: text(button.id, `buttons[${i}].id`, buttonId), title: text(button.title, `buttons[${i}].title`, buttonTitle) }
  })
  uniqueIds(buttons.map((button) => button.id), (i) => `buttons[${i}]`)
  return buttons
}

function listOf (value: unknown): InteractiveContent['list'] {
  const limits = INTERACTIVE_LIMITS
  if (!isRecord(value)) throw invalid('list is required for type list: {button, sections}')
  const button = text(value.button, 'list.button', limits.listButton)
  const sections = value.sections
  if (!Array.isArray(sections) || sections.length === 0 || sections.length > limits.sections) throw invalid(`list.sections must hold 1 to ${limits.sections} sections`)
  let rowCount = 0
  const checked = sections.map((section: unknown, s) => {
    const field = `list.sections[${s}]`
    if (!isRecord(section)) throw invalid(`${field} must be an object with rows`)
    // The platform wants every section titled once there are several.
    if (sections.length > 1 && !given(section.title)) throw invalid(`${field}.title is required when the list has more than one section`)
    const title = optionalText(section.title, `${field}.title`, limits.sectionTitle)
    if (!Array.isArray(section.rows) || section.rows.length === 0) throw invalid(`${field}.rows must hold at least one row`)
    rowCount += section.rows.length
    if (rowCount > limits.rows) throw invalid(`list.sections must hold at most ${limits.rows} rows in all`)
    const rows = section.rows.map((row: unknown, r) => {
      const rowField = `${field}.rows[${r}]`
      if (!isRecord(row)) throw invalid(`${rowField} must be an object with id and title`)
      const description = optionalText(row.description, `${rowField}.description`, limits.rowDescription)
      return {
        id: text(row.id, `${rowField}.id`, limits.rowId),
        title: text(row.title, `${rowField}.title`, limits.rowTitle),
        ...(description !== undefined && { description })
      }
    })
    return { ...(title !== undefined && { title }), rows }
  })
  const rowIds = checked.flatMap((section, s) => section.rows.map((row, r) => ({ id: row.id, field: `list.sections[${s}].rows[${r}]` })))
  uniqueIds(rowIds.map((row) => row.id), (i) => rowIds[i]!.field)
  return { button, sections: checked }
}

/** How deeply `value` nests objects and arrays (`{}` is 1), counted no further than `max` + 1: no deep recursion. */
function depthOf (value: unknown, max: number): number {
  if (typeof value !== 'object' || value === null) return 0
  if (max < 0) return 1
  let deepest = 0
  for (const child of Object.values(value)) {
    deepest = Math.max(deepest, depthOf(child, max - 1))
    if (deepest > max) break
  }
  return deepest + 1
}

function flowOf (value: unknown): FlowContent {
  const limits = INTERACTIVE_LIMITS
  if (!isRecord(value)) throw invalid('flow is required for type flow: {id or name, cta, screen?, data?, token?, action?}')
  if (given(value.id) === given(value.name)) throw invalid('flow needs exactly one of flow.id and flow.name')
  const id = optionalText(value.id, 'flow.id', limits.flowId)
  const name = optionalText(value.name, 'flow.name', limits.flowName)
  const cta = text(value.cta, 'flow.cta', limits.flowCta)
  if (/\p{Extended_Pictographic}/u.test(cta)) throw invalid('flow.cta must have no emoji')
  // Any case, as the node's schema takes it (oneOfAnyCase).
  const action = given(value.action) ? FLOW_ACTIONS.find((candidate) => candidate === String(value.action).toLowerCase()) : 'navigate'
  if (action === undefined) throw invalid(`flow.action must be one of ${FLOW_ACTIONS.join(', ')}`)
  const screen = optionalText(value.screen, 'flow.screen', limits.flowScreen)
  const token = optionalText(value.token, 'flow.token', limits.flowToken)
  const data = given(value.data) ? value.data : undefined
  // The platform: a navigate flow's payload is its first screen and data; a data exchange's comes from the flow's endpoint.
  if (action === 'data_exchange' && (screen !== undefined || data !== undefined)) throw invalid('flow.screen and flow.data are only for action navigate')
  if (data !== undefined) {
    if (!isRecord(data) || Object.keys(data).length === 0) throw invalid('flow.data must be a non-empty object')
    if (screen === undefined) throw invalid('flow.data needs flow.screen, the screen it is for')
    if (depthOf(data, limits.flowDataDepth) > limits.flowDataDepth) throw invalid(`flow.data must nest at most ${limits.flowDataDepth} levels`)
    if (Buffer.byteLength(JSON.stringify(data)) > limits.flowDataBytes) throw invalid(`flow.data must be at most ${limits.flowDataBytes} bytes as JSON`)
  }
  return {
    ...(id !== undefined ? { id } : { name: name as string }),
    cta,
    action: action as FlowAction,
    ...(screen !== undefined && { screen }),
    ...(data !== undefined && { data: data as Record<string, unknown> }),
    ...(token !== undefined && { token })
  }
}

/**
 * An interactive message as the platform takes it, from what an API caller or a workflow node
 * wrote: refused (400 `VALIDATION_ERROR`) over any of the platform's limits, naming the field and
 * the limit, and with `buttons` for type button, `list` for type list, `flow` for type flow, never another.
 */
export function checkInteractive (input: Record<string, unknown>): InteractiveContent {
  const type = INTERACTIVE_TYPES.find((candidate) => candidate === input.type)
  if (type === undefined) throw invalid(`type must be one of ${INTERACTIVE_TYPES.join(', ')}`)
  const header = optionalText(input.header, 'header', INTERACTIVE_LIMITS.header)
  const footer = optionalText(input.footer, 'footer', INTERACTIVE_LIMITS.footer)
  const fields = {
    type,
    body: text(input.body, 'body', INTERACTIVE_LIMITS.body),
    ...(header !== undefined && { header }),
    ...(footer !== undefined && { footer })
  }
  if (type !== 'button' && given(input.buttons)) throw invalid('buttons is only for type button')
  if (type !== 'list' && given(input.list)) throw invalid('list is only for type list')
  if (type !== 'flow' && given(input.flow)) throw invalid('flow is only for type flow')
  if (type === 'button') return { ...fields, buttons: buttonsOf(input.buttons) }
  if (type === 'list') return { ...fields, list: listOf(input.list) }
  return { ...fields, flow: flowOf(input.flow) }
}

/** A tap's id and title as a workflow gets them, cut to this: longer than any the platform sends (a quick reply's payload). */
const REPLY_MAX_CHARS = 1024

const replyText = (value: unknown): string => typeof value === 'string' ? value.slice(0, REPLY_MAX_CHARS) : ''

/** The tap an inbound `interactive` or `button` message carries; undefined for any other message. */
export function interactiveReplyOf (message: Record<string, unknown>): InteractiveReply | undefined {
  const part = message[String(message.type)]
  if (!isRecord(part)) return undefined
  if (message.type === 'button') return { type: 'quick_reply', id: replyText(part.payload), title: replyText(part.text) }
  if (message.type !== 'interactive') return undefined
  const type = part.type === 'button_reply' || part.type === 'list_reply' ? part.type : undefined
  const reply = type === undefined ? undefined : part[type]
  if (type === undefined || !isRecord(reply)) return undefined
  return { type, id: replyText(reply.id), title: replyText(reply.title) }
}

type Unreadable = NonNullable<FlowReply['unreadable']>

/** A flow reply's `response_json` as an object, or why it is not kept: bounded before it is parsed, and its strings made storable. */
function flowResponseOf (json: unknown): Record<string, unknown> | Unreadable {
  const { bytes, depth } = FLOW_REPLY_LIMITS
  if (typeof json !== 'string') return 'not_json'
  if (json.length > bytes || Buffer.byteLength(json) > bytes) return 'too_large'
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch {
    return 'not_json'
  }
  if (!isRecord(parsed)) return 'not_json'
  if (depthOf(parsed, depth) > depth) return 'too_deep'
  return JSON.parse(storableJson(parsed)) as Record<string, unknown>
}

/**
 * The completed flow an inbound `interactive` message of type `nfm_reply` carries (README, Flows);
 * undefined for any other message.
 */
export function flowReplyOf (message: Record<string, unknown>): FlowReply | undefined {
  const part = message.interactive
  if (message.type !== 'interactive' || !isRecord(part) || part.type !== 'nfm_reply' || !isRecord(part.nfm_reply)) return undefined
  const reply = part.nfm_reply
  const response = flowResponseOf(reply.response_json)
  return {
    name: replyText(reply.name),
    body: replyText(reply.body),
    ...(typeof response === 'string' ? { response: {}, unreadable: response } : { response })
  }
}
