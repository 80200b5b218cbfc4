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
  schemaPath: string
  instancePath: string
  params: Record<string, unknown>
  message: string
}

/** The sub-schema an error's `schemaPath` (`#/properties/text/anyOf/1`) points at. */
function schemaAt (schema: unknown, pointer: string): unknown {
  let at = schema
  for (const part of pointer.replace(/^#\/?/, '').split('/').filter((segment) => segment !== '')) {
    if (at === null || typeof at !== 'object') return undefined
    at = (at as Record<string, unknown>)[part.replaceAll('~1', '/').replaceAll('~0', '~')]
  }
  return at
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
  // The branch of `templated` that would have taken a template: said as "(or a template)".
  const isTemplateBranch = (error: SchemaError): boolean => (schemaAt(schema, error.schemaPath) as { pattern?: string } | undefined)?.pattern === TEMPLATE_PATTERN
  const first = errors.find((error) => error.keyword !== 'anyOf' && !isTemplateBranch(error)) ?? errors[0]
  if (first === undefined) return 'config does not match its schema'
  const here = errors.filter((error) => error.instancePath === first.instancePath && error.keyword !== 'anyOf')
  const templateAllowed = here.some(isTemplateBranch)
  const reasons = [...new Set(here.filter((error) => !isTemplateBranch(error)).map(describe))]
  const field = first.keyword === 'required' ? 'config' : fieldName(first.instancePath)
  return `${field} ${reasons.join(' or ')}${templateAllowed ? ' (or a template)' : ''}`
}
