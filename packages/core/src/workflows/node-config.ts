import { Value } from 'typebox/value'
import type { NodeDefinition } from '../engine/nodes/definition.ts'
import { nodeConfigSchema } from '../engine/nodes/index.ts'

/** The part of a failed anyOf that only says a value could also have been a template. */
const TEMPLATE_PATTERN = '\\{\\{'

/** `/headers/x-a` → `config.headers.x-a`. */
const fieldName = (instancePath: string): string =>
  `config${instancePath.split('/').slice(1).map((part) => `.${part.replaceAll('~1', '/').replaceAll('~0', '~')}`).join('')}`

interface SchemaError {
  keyword: string
  instancePath: string
  params: Record<string, unknown>
  message: string
}

function describe (error: SchemaError): string {
  const { keyword, params } = error
  if (keyword === 'enum' && Array.isArray(params.allowedValues)) return `must be one of ${params.allowedValues.join(', ')}`
  if (keyword === 'const' && params.allowedValue !== undefined) return `must be ${JSON.stringify(params.allowedValue)}`
  if (keyword === 'required' && Array.isArray(params.requiredProperties)) return `${params.requiredProperties.join(', ')} is required`
  return error.message
}

/**
 * Why a node's config does not match its type's schema (`nodeConfigSchema`), in one sentence
 * naming the field, or undefined when it does. A null field counts as absent (executors read it
 * so). Only the first field at fault is named: a value that may be a template says so.
 */
export function checkNodeConfig (definition: NodeDefinition, config: Record<string, unknown>): string | undefined {
  const schema = nodeConfigSchema(definition)
  const present = Object.fromEntries(Object.entries(config).filter(([, value]) => value !== null))
  if (Value.Check(schema, present)) return undefined
  const errors = Value.Errors(schema, present) as SchemaError[]
  const first = errors.find((error) => error.keyword !== 'anyOf') ?? errors[0]
  if (first === undefined) return 'config does not match its schema'
  const here = errors.filter((error) => error.instancePath === first.instancePath && error.keyword !== 'anyOf')
  const templateAllowed = here.some((error) => error.keyword === 'pattern' && error.params.pattern === TEMPLATE_PATTERN)
  const reasons = [...new Set(here.filter((error) => !(error.keyword === 'pattern' && error.params.pattern === TEMPLATE_PATTERN)).map(describe))]
  const field = first.keyword === 'required' ? 'config' : fieldName(first.instancePath)
  return `${field} ${reasons.join(' or ')}${templateAllowed ? ' (or a template)' : ''}`
}
