import type { JsonSchema, NodeTypeInfo, WorkflowNode } from './types.ts'

/**
 * The workflow editor's pure helpers for nodes: the palette of node types, adding a node, and a
 * node type's config schema (GET /api/automation/node-types) as form fields, with the parsing of
 * what a user types into them.
 */

/** The palette: the node types by their category, in the order the api lists the categories (GET /api/automation/node-types). */
export function paletteOf (nodeTypes: NodeTypeInfo[]): Array<{ group: string, nodeTypes: NodeTypeInfo[] }> {
  const groups = new Map<string, NodeTypeInfo[]>()
  for (const nodeType of nodeTypes) groups.set(nodeType.category, [...groups.get(nodeType.category) ?? [], nodeType])
  return [...groups].map(([group, members]) => ({ group, nodeTypes: members }))
}

/**
 * The config a node added from the palette starts with: the defaults of its required fields, and
 * nothing else. The type's example shows in each field as a placeholder and is never saved: a
 * made-up URL or workflow id saved unnoticed breaks a run, where an empty field says Required.
 */
export function startingConfig (nodeType: NodeTypeInfo): Record<string, unknown> {
  const { properties = {}, required = [] } = nodeType.configSchema
  const defaults = Object.fromEntries(required.flatMap((name) => properties[name]?.default === undefined ? [] : [[name, structuredClone(properties[name].default)]]))
  return { ...defaults, ...structuredClone(BUILDER_CHOICES[nodeType.type]) }
}

/**
 * Where a node made in the builder starts otherwise than the api's default, which stays for
 * workflows saved before: a merge joins its branches' outputs by node id, `{{merge.lookupA.x}}`,
 * not by branch and node, `{{merge.lookupA.lookupA.x}}` (docs/nodes.md, merge).
 */
const BUILDER_CHOICES: Record<string, Record<string, unknown>> = { merge: { output: 'byNode' } }

/**
 * The nodes with one more of `nodeType`, chained after the last node when that one leads nowhere
 * yet: no `next`, and no link fields (a condition's branches) of its own.
 */
export function withNode (nodes: WorkflowNode[], nodeType: NodeTypeInfo, nodeTypes: NodeTypeInfo[]): WorkflowNode[] {
  const taken = new Set(nodes.map((node) => node.id))
  let n = nodes.length + 1
  while (taken.has(`n${n}`)) n++
  const added: WorkflowNode = { id: `n${n}`, type: nodeType.type, config: startingConfig(nodeType) }
  const last = nodes.at(-1)
  const branches = (type: string): boolean => (nodeTypes.find((candidate) => candidate.type === type)?.traits.links.length ?? 0) > 0
  if (last === undefined || last.next !== undefined || branches(last.type)) return [...nodes, added]
  return [...nodes.slice(0, -1), { ...last, next: added.id }, added]
}

/** The control a field is edited with. */
export type FieldKind = 'text' | 'textarea' | 'code' | 'number' | 'boolean' | 'json'

export interface ConfigField {
  name: string
  kind: FieldKind
  description: string | undefined
  required: boolean
  default: unknown
  /** The type's example value for the field: its placeholder. */
  example: unknown
  /** What a value may be: the field's schema with its `anyOf` flattened, the template branch included. */
  accepted: JsonSchema[]
  /** A template (`{{…}}`, rendered when the node runs) is accepted as well as a value. */
  templated: boolean
  /** Values to suggest: the schema's examples and constants, true and false. */
  suggestions: string[]
  /** A number input's bounds and step. */
  minimum?: number
  maximum?: number
  integer?: boolean
}

/** The template branch's pattern, as `templated()` of packages/core/src/engine/nodes/definition.ts writes it. */
const TEMPLATE_PATTERN = '\\{\\{'
/** Strings that may be longer than this get a textarea. */
const LONG_TEXT = 1000

const isTemplate = (schema: JsonSchema): boolean => schema.type === 'string' && schema.pattern === TEMPLATE_PATTERN
const leaves = (schema: JsonSchema): JsonSchema[] => schema.anyOf === undefined ? [schema] : schema.anyOf.flatMap(leaves)
const SCALARS = new Set(['string', 'number', 'integer', 'boolean'])
const scalarType = (schema: JsonSchema): string | undefined =>
  typeof schema.type === 'string' && SCALARS.has(schema.type) ? schema.type : undefined

function fieldOf (nodeType: string, name: string, schema: JsonSchema, required: boolean, example: unknown): ConfigField {
  const accepted = leaves(schema)
  const values = accepted.filter((leaf) => !isTemplate(leaf))
  const types = values.map(scalarType)
  const templated = values.length < accepted.length
  let kind: FieldKind
  if (values.length === 0 || types.includes(undefined)) kind = 'json'
  else if (types.every((type) => type === 'string')) {
    kind = nodeType === 'code' && name === 'code' ? 'code' : Math.max(...values.map((leaf) => leaf.maxLength ?? 0)) > LONG_TEXT ? 'textarea' : 'text'
  } else if (!templated && values.length === 1) kind = types[0] === 'boolean' ? 'boolean' : 'number'
  // A union of scalars, or a number or boolean that may be a template: one text input for all of them.
  else kind = 'text'
  const number = values.find((leaf) => leaf.type === 'number' || leaf.type === 'integer')
  return {
    name,
    kind,
    description: schema.description,
    required,
    default: schema.default,
    example,
    accepted,
    templated,
    suggestions: [...new Set(values.flatMap((leaf) => [
      ...(leaf.examples ?? []), ...(leaf.enum ?? []), ...(leaf.const === undefined ? [] : [leaf.const]), ...(leaf.type === 'boolean' ? [true, false] : [])
    ]).map(String))],
    ...(kind === 'number' && number !== undefined && { minimum: number.minimum, maximum: number.maximum, integer: number.type === 'integer' })
  }
}

/** An object field's own example (a flow of send_chat_interactive), for the placeholder when the type's example has none. */
const objectExample = (schema: JsonSchema): unknown => leaves(schema).find((leaf) => leaf.type === 'object' && leaf.examples !== undefined)?.examples?.[0]

/** A node type's config fields, in its schema's order. */
export function fieldsOf (nodeType: NodeTypeInfo): ConfigField[] {
  const { properties = {}, required = [] } = nodeType.configSchema
  return Object.entries(properties).map(([name, schema]) => fieldOf(nodeType.type, name, schema, required.includes(name), nodeType.example[name] ?? objectExample(schema)))
}

const patterns = new Map<string, RegExp | null>()
function matches (pattern: string, text: string): boolean {
  if (!patterns.has(pattern)) {
    let compiled: RegExp | null = null
    try {
      compiled = new RegExp(pattern, 'u')
    } catch {
      // A pattern this browser cannot compile is left to the api's check at save.
    }
    patterns.set(pattern, compiled)
  }
  return patterns.get(pattern)?.test(text) ?? true
}

/** Characters as JSON Schema counts them: code points, not UTF-16 units (counted apart only where a pair is). */
const characters = (text: string): number => /[\uD800-\uDBFF]/.test(text) ? [...text].length : text.length

/** Whether `value` matches one branch of a field's schema: its type and bounds, not what lies inside objects and arrays. */
function accepts (schema: JsonSchema, value: unknown): boolean {
  if (schema.const !== undefined) return schema.const === value
  if (schema.enum !== undefined) return schema.enum.includes(value)
  switch (schema.type) {
    case 'string':
      return typeof value === 'string' && characters(value) >= (schema.minLength ?? 0) && characters(value) <= (schema.maxLength ?? Infinity) &&
        (schema.pattern === undefined || matches(schema.pattern, value))
    case 'number':
    case 'integer':
      return typeof value === 'number' && Number.isFinite(value) && (schema.type === 'number' || Number.isInteger(value)) &&
        value >= (schema.minimum ?? -Infinity) && value <= (schema.maximum ?? Infinity)
    case 'boolean': return typeof value === 'boolean'
    case 'array': return Array.isArray(value) && value.length >= (schema.minItems ?? 0) && value.length <= (schema.maxItems ?? Infinity)
    case 'object': return typeof value === 'object' && value !== null && !Array.isArray(value)
    case 'null': return value === null
    default: return true
  }
}

function range (min: number | undefined, max: number | undefined, unit = ''): string {
  if (min !== undefined && max !== undefined) return unit === '' ? ` from ${min} to ${max}` : ` of ${min} to ${max}${unit}`
  if (min !== undefined) return ` of at least ${min}${unit}`
  return max === undefined ? '' : ` of at most ${max}${unit}`
}

/** What a field takes, in words: `Expected a number from 1 to 300000, or a {{template}}`. */
function expectation (field: ConfigField): string {
  const constants = field.accepted.filter((leaf) => leaf.const !== undefined).map((leaf) => String(leaf.const))
  const words = field.accepted.filter((leaf) => leaf.const === undefined).map((leaf) => {
    if (isTemplate(leaf)) return 'a {{template}}'
    switch (leaf.type) {
      case 'number': return `a number${range(leaf.minimum, leaf.maximum)}`
      case 'integer': return `a whole number${range(leaf.minimum, leaf.maximum)}`
      case 'boolean': return 'true or false'
      case 'string': return leaf.pattern !== undefined && leaf.examples !== undefined
        ? `one of ${leaf.examples.join(', ')}`
        : `text${leaf.minLength === 1 && leaf.maxLength === undefined ? '' : range(leaf.minLength, leaf.maxLength, ' characters')}`
      case 'array': return `a JSON array${range(leaf.minItems, leaf.maxItems, ' items')}`
      case 'object': return 'a JSON object'
      default: return 'a JSON value'
    }
  })
  if (constants.length > 0) words.unshift(`one of ${constants.join(', ')}`)
  return `Expected ${words.join(', or ')}`
}

type Parsed = { value: unknown } | { error: string }

const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

/**
 * The value a field's text stands for; empty text leaves the field out (its default applies). A
 * text input keeps a number or true/false as such where the schema takes one, else the text
 * itself, a template included; a JSON textarea takes JSON, or a template where the field allows one.
 */
export function parseField (field: ConfigField, text: string): Parsed {
  // A text input's spaces may be its value (a prefix); a textarea of spaces is empty.
  const empty = field.kind === 'text' ? text === '' : text.trim() === ''
  if (empty) return field.required ? { error: 'Required' } : { value: undefined }
  if (field.kind === 'json') {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch (err) {
      if (field.accepted.some((leaf) => isTemplate(leaf) && accepts(leaf, text))) return { value: text }
      const quotes = field.accepted.some((leaf) => leaf.type === 'string' && !isTemplate(leaf)) ? ' (text goes in "quotes")' : ''
      return { error: `Not valid JSON${field.templated ? ' nor a {{template}}' : ''}${quotes}: ${(err as Error).message}` }
    }
    return field.accepted.some((leaf) => accepts(leaf, value)) ? { value } : { error: expectation(field) }
  }
  const candidates: unknown[] = []
  if (NUMBER.test(text.trim())) candidates.push(Number(text))
  if (text === 'true' || text === 'false') candidates.push(text === 'true')
  candidates.push(text)
  for (const candidate of candidates) if (field.accepted.some((leaf) => accepts(leaf, candidate))) return { value: candidate }
  return { error: expectation(field) }
}

/** The text a field's control shows for `value`. */
export function textOf (field: ConfigField, value: unknown): string {
  if (value === undefined) return ''
  if (field.kind !== 'json' || (field.templated && typeof value === 'string')) return String(value)
  return JSON.stringify(value, null, 2)
}

/** Whether the field's control can show `value`; a value it cannot (an object in a text field) is edited as JSON. */
function fits (field: ConfigField, value: unknown): boolean {
  if (value === undefined || field.kind === 'json') return true
  if (field.kind === 'boolean') return typeof value === 'boolean'
  if (field.kind === 'number') return typeof value === 'number'
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
}

/** What the user typed into a field, with the value it was typed over (`JSON.stringify`): a change made elsewhere (the JSON view) replaces it. */
export interface FieldEdit {
  text: string
  basis: string | undefined
  /** A number input holding what is not a number (the browser gives no text for it). */
  badInput?: boolean
}

/** A field as the form shows it: the control (JSON for a value its own cannot show), its text and its error. */
export function fieldState (field: ConfigField, value: unknown, edit: FieldEdit | undefined): { field: ConfigField, text: string, error: string | undefined } {
  const shown: ConfigField = fits(field, value) ? field : { ...field, kind: 'json' }
  if (edit !== undefined && edit.basis === JSON.stringify(value)) {
    if (edit.badInput === true) return { field: shown, text: edit.text, error: 'Expected a number' }
    const parsed = parseField(shown, edit.text)
    return { field: shown, text: edit.text, error: 'error' in parsed ? parsed.error : undefined }
  }
  return { field: shown, text: textOf(shown, value), error: value === undefined && field.required ? 'Required' : undefined }
}

/** `config` with `name` set to `value`, or without it for undefined; other keys untouched. */
export function withValue (config: Record<string, unknown>, name: string, value: unknown): Record<string, unknown> {
  const next = { ...config }
  if (value === undefined) delete next[name]
  else next[name] = value
  return next
}
