import { DomainError } from '../errors.ts'
import { TEMPLATE_CATEGORIES } from '../db/values.ts'

/**
 * The platform's rules for a new template (README, Chat: templates), checked here so that a template
 * it would refuse is a 400 naming the rule before it is called. `exampleValue` is ours: the longest
 * text a variable's example may hold, a URL's length.
 */
export const TEMPLATE_LIMITS = {
  name: 512,
  headerText: 60,
  bodyText: 1024,
  footerText: 60,
  buttons: 10,
  urlButtons: 2,
  phoneNumberButtons: 1,
  copyCodeButtons: 1,
  buttonText: 25,
  url: 2000,
  phoneNumber: 20,
  copyCode: 15,
  headerVariables: 1,
  exampleValue: 2000
} as const

export const TEMPLATE_NAME_PATTERN = '^[a-z0-9_]+$'
/** The language codes the platform's templates take: `en`, `en_US`, `pt_BR`, `fil`. */
export const TEMPLATE_LANGUAGE_PATTERN = '^[a-z]{2,3}(_[A-Z]{2})?$'
export const TEMPLATE_COMPONENT_TYPES = ['HEADER', 'BODY', 'FOOTER', 'BUTTONS'] as const
export const TEMPLATE_HEADER_FORMATS = ['TEXT', 'IMAGE', 'VIDEO', 'DOCUMENT', 'LOCATION'] as const
export const TEMPLATE_BUTTON_TYPES = ['QUICK_REPLY', 'URL', 'PHONE_NUMBER', 'COPY_CODE'] as const

type TemplateCategory = typeof TEMPLATE_CATEGORIES[number]

/** A template as the platform's create takes it: its components are passed on as the caller wrote them. */
interface NewTemplate {
  name: string
  language: string
  category: TemplateCategory
  components: Array<Record<string, unknown>>
}

const invalid = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

const isText = (value: unknown, max: number): value is string => typeof value === 'string' && value.length > 0 && value.length <= max

const NAME = new RegExp(TEMPLATE_NAME_PATTERN)
const LANGUAGE = new RegExp(TEMPLATE_LANGUAGE_PATTERN)

/** Whether `name` is one the platform gives a template. */
export const isTemplateName = (name: unknown): name is string => isText(name, TEMPLATE_LIMITS.name) && NAME.test(name)

function text (value: unknown, field: string, max: number): string {
  if (!isText(value, max)) throw invalid(`${field} must be 1 to ${max} characters`)
  return value
}

// `[^{}]*` cannot run past the next brace, so each `{{` is looked at once: linear in the text.
const PLACEHOLDER = /\{\{([^{}]*)\}\}/g
const VARIABLE_NUMBER = /^[1-9][0-9]*$/

/**
 * How many variables `value` holds, checked to be the platform's positional ones, numbered `{{1}}`
 * to `{{n}}` without a gap (each may appear more than once).
 */
function variableCount (value: string, field: string): number {
  const numbers = new Set<number>()
  for (const [placeholder, inside] of value.matchAll(PLACEHOLDER)) {
    if (!VARIABLE_NUMBER.test(inside ?? '')) throw invalid(`${field} has ${placeholder}: variables are numbered {{1}}, {{2}}, …`)
    numbers.add(Number(inside))
  }
  for (let n = 1; n <= numbers.size; n++) {
    if (!numbers.has(n)) throw invalid(`${field} must number its variables {{1}} to {{${numbers.size}}} without a gap: {{${n}}} is missing`)
  }
  return numbers.size
}

const valuesOf = (count: number): string => count === 1 ? '1 value' : `${count} values`

/** An example of `count` values: `values` must give exactly one for each variable. */
function exampleValues (values: unknown, field: string, count: number): void {
  if (!Array.isArray(values) || values.length !== count) throw invalid(`${field} must give ${valuesOf(count)}, one per variable`)
  values.forEach((value, i) => { text(value, `${field}[${i}]`, TEMPLATE_LIMITS.exampleValue) })
}

function checkHeader (component: Record<string, unknown>, field: string): void {
  const format = TEMPLATE_HEADER_FORMATS.find((candidate) => candidate === component.format)
  if (format === undefined) throw invalid(`${field}.format must be one of ${TEMPLATE_HEADER_FORMATS.join(', ')}`)
  const example = isRecord(component.example) ? component.example : {}
  if (format === 'TEXT') {
    const count = variableCount(text(component.text, `${field}.text`, TEMPLATE_LIMITS.headerText), `${field}.text`)
    if (count > TEMPLATE_LIMITS.headerVariables) throw invalid(`${field}.text may hold at most ${TEMPLATE_LIMITS.headerVariables} variable`)
    if (count > 0 || example.header_text !== undefined) exampleValues(example.header_text, `${field}.example.header_text`, count)
    return
  }
  if (component.text !== undefined) throw invalid(`${field}.text is only for format TEXT`)
  // A media header is reviewed on a sample the business uploaded first (the platform's upload handle).
  const handles = example.header_handle
  if (format !== 'LOCATION' && (!Array.isArray(handles) || handles.length !== 1 || !isText(handles[0], TEMPLATE_LIMITS.exampleValue))) {
    throw invalid(`${field}.example.header_handle must hold the upload handle of a sample ${format.toLowerCase()}`)
  }
}

function checkBody (component: Record<string, unknown>, field: string): void {
  const count = variableCount(text(component.text, `${field}.text`, TEMPLATE_LIMITS.bodyText), `${field}.text`)
  const example = isRecord(component.example) ? component.example : {}
  if (count === 0 && example.body_text === undefined) return
  const rows = example.body_text
  if (!Array.isArray(rows) || rows.length !== 1) throw invalid(`${field}.example.body_text must be one list of ${valuesOf(count)}, one per variable`)
  exampleValues(rows[0], `${field}.example.body_text[0]`, count)
}

function checkFooter (component: Record<string, unknown>, field: string): void {
  if (variableCount(text(component.text, `${field}.text`, TEMPLATE_LIMITS.footerText), `${field}.text`) > 0) throw invalid(`${field}.text cannot hold variables`)
}

function checkButton (button: unknown, field: string, counts: Map<string, number>): void {
  if (!isRecord(button)) throw invalid(`${field} must be an object with type`)
  const type = TEMPLATE_BUTTON_TYPES.find((candidate) => candidate === button.type)
  if (type === undefined) throw invalid(`${field}.type must be one of ${TEMPLATE_BUTTON_TYPES.join(', ')}`)
  counts.set(type, (counts.get(type) ?? 0) + 1)
  // The platform writes a copy code button's label itself.
  if (type !== 'COPY_CODE') text(button.text, `${field}.text`, TEMPLATE_LIMITS.buttonText)
  if (type === 'URL') {
    const url = text(button.url, `${field}.url`, TEMPLATE_LIMITS.url)
    if (!/^https?:\/\//.test(url)) throw invalid(`${field}.url must be an http or https URL`)
    const count = variableCount(url, `${field}.url`)
    // The platform fills in only a suffix: one variable, at the very end.
    if (count > 1 || (count === 1 && !url.endsWith('{{1}}'))) throw invalid(`${field}.url may hold one variable, {{1}}, at its end only`)
    if (count === 1 || button.example !== undefined) exampleValues(button.example, `${field}.example`, count)
  } else if (type === 'PHONE_NUMBER') {
    text(button.phone_number, `${field}.phone_number`, TEMPLATE_LIMITS.phoneNumber)
  } else if (type === 'COPY_CODE') {
    text(button.example, `${field}.example`, TEMPLATE_LIMITS.copyCode)
  }
}

function checkButtons (component: Record<string, unknown>, field: string): void {
  const { buttons } = component
  const limits = TEMPLATE_LIMITS
  if (!Array.isArray(buttons) || buttons.length === 0 || buttons.length > limits.buttons) throw invalid(`${field}.buttons must hold 1 to ${limits.buttons} buttons`)
  const counts = new Map<string, number>()
  buttons.forEach((button, i) => { checkButton(button, `${field}.buttons[${i}]`, counts) })
  const most: Array<[string, number]> = [['URL', limits.urlButtons], ['PHONE_NUMBER', limits.phoneNumberButtons], ['COPY_CODE', limits.copyCodeButtons]]
  for (const [type, max] of most) {
    if ((counts.get(type) ?? 0) > max) throw invalid(`${field}.buttons may hold at most ${max} ${type} button${max === 1 ? '' : 's'}`)
  }
}

const COMPONENT_CHECKS = { HEADER: checkHeader, BODY: checkBody, FOOTER: checkFooter, BUTTONS: checkButtons }

/**
 * A new template as the platform takes it, from what an API caller wrote: refused (400
 * `VALIDATION_ERROR`) over any of the platform's rules, naming the field and the rule. Each check
 * reads its field once, and every list is bounded before it is read, so a hostile body (thousands
 * of components, variables or buttons) is refused in time linear in its size.
 */
export function checkTemplate (input: Record<string, unknown>): NewTemplate {
  const name = input.name
  if (!isTemplateName(name)) throw invalid(`name must be 1 to ${TEMPLATE_LIMITS.name} lowercase letters, digits and underscores`)
  const language = input.language
  if (typeof language !== 'string' || !LANGUAGE.test(language)) throw invalid('language must be a language code such as en_US or ar')
  const category = TEMPLATE_CATEGORIES.find((candidate) => candidate === input.category)
  if (category === undefined) throw invalid(`category must be one of ${TEMPLATE_CATEGORIES.join(', ')}`)
  const components = input.components
  if (!Array.isArray(components)) throw invalid('components must be a list of HEADER, BODY, FOOTER and BUTTONS components')
  const seen = new Set<string>()
  components.forEach((component: unknown, i) => {
    const field = `components[${i}]`
    if (!isRecord(component)) throw invalid(`${field} must be an object with type`)
    const type = TEMPLATE_COMPONENT_TYPES.find((candidate) => candidate === component.type)
    if (type === undefined) throw invalid(`${field}.type must be one of ${TEMPLATE_COMPONENT_TYPES.join(', ')}`)
    // Refused at the first repeat, so at most four components are ever checked.
    if (seen.has(type)) throw invalid(`${field} repeats ${type}: a template has at most one ${TEMPLATE_COMPONENT_TYPES.join(', ')} each`)
    seen.add(type)
    COMPONENT_CHECKS[type](component, field)
  })
  if (!seen.has('BODY')) throw invalid('components must include a BODY')
  return { name, language, category, components: components as NewTemplate['components'] }
}
