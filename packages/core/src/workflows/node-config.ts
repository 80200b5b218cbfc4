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

type Schema = Record<string, unknown> | undefined

/** The part of `root` a `schemaPath` (`#/properties/op/anyOf/0`) points at. */
function schemaAt (root: unknown, schemaPath: string): Schema {
  let schema = root
  for (const part of schemaPath.replace(/^#\/?/, '').split('/').filter((segment) => segment !== '')) {
    if (schema === null || typeof schema !== 'object') return undefined
    schema = (schema as Record<string, unknown>)[part.replaceAll('~1', '/').replaceAll('~0', '~')]
  }
  return schema !== null && typeof schema === 'object' ? schema as Record<string, unknown> : undefined
}

/**
 * The unions a failed branch (`…/op/anyOf/0/anyOf/3`) is part of, innermost first: what else the
 * value may be. Its errors may not all be listed (Value.Errors stops at 8).
 */
function unionsAround (root: unknown, schemaPath: string): Schema[][] {
  const unions: Schema[][] = []
  for (let path = schemaPath; /\/anyOf\/\d+$/.test(path);) {
    path = path.replace(/\/anyOf\/\d+$/, '')
    const union = schemaAt(root, path)?.anyOf
    if (Array.isArray(union)) unions.push(union as Schema[])
  }
  return unions
}

/** The values of a union of literals (`Type.Union([Type.Literal(…), …])`) the failed `const` belongs to. */
function literalsAround (root: unknown, error: SchemaError): unknown[] | undefined {
  const [union] = unionsAround(root, error.schemaPath)
  if (union === undefined || !union.every((member) => member !== undefined && 'const' in member)) return undefined
  return union.map((member) => member?.const)
}

function describe (error: SchemaError, root: unknown): string {
  const { keyword, params } = error
  if (keyword === 'enum' && Array.isArray(params.allowedValues)) return `must be one of ${params.allowedValues.join(', ')}`
  if (keyword === 'const') {
    const literals = literalsAround(root, error)
    if (literals !== undefined) return `must be one of ${literals.join(', ')}`
    if (params.allowedValue !== undefined) return `must be ${JSON.stringify(params.allowedValue)}`
  }
  // oneOfAnyCase (engine/nodes/definition.ts): its pattern is unreadable, its examples are the values.
  const examples = keyword === 'pattern' ? schemaAt(root, error.schemaPath)?.examples : undefined
  if (Array.isArray(examples)) return `must be one of ${examples.join(', ')}`
  if (keyword === 'required' && Array.isArray(params.requiredProperties)) return `${params.requiredProperties.join(', ')} is required`
  if (keyword === 'boolean' && error.schemaPath.endsWith('/additionalProperties')) return 'is not a known field'
  return error.message
}

/**
 * Why a node's config does not match its type's schema (`nodeConfigSchema`), in one sentence
 * naming the field, or undefined when it does. A null field counts as absent (executors read it
 * so). Only one field at fault is named, the deepest: a value that may be a template says so.
 */
export function checkNodeConfig (definition: NodeDefinition, config: Record<string, unknown>): string | undefined {
  const schema = nodeConfigSchema(definition)
  const present = Object.fromEntries(Object.entries(config).filter(([, value]) => value !== null))
  if (Value.Check(schema, present)) return undefined
  const errors = Value.Errors(schema, present) as SchemaError[]
  // The deepest fault: a value that failed every branch of a union is named where the branch that fits it best failed.
  const depth = (error: SchemaError): number => error.instancePath.split('/').length
  const first = errors.filter((error) => error.keyword !== 'anyOf').reduce<SchemaError | undefined>((deepest, error) =>
    deepest === undefined || depth(error) > depth(deepest) ? error : deepest, undefined) ?? errors[0]
  if (first === undefined) return 'config does not match its schema'
  const here = errors.filter((error) => error.instancePath === first.instancePath && error.keyword !== 'anyOf')
  // The template branch of a `templated` field fails as not text or not a template: it only says one is allowed.
  const isTemplateBranch = (error: SchemaError): boolean => schemaAt(schema, error.schemaPath)?.pattern === TEMPLATE_PATTERN
  const templateAllowed = here.some((error) => unionsAround(schema, error.schemaPath).some((union) =>
    union.some((member) => member?.pattern === TEMPLATE_PATTERN)))
  const reasons = [...new Set(here.filter((error) => !isTemplateBranch(error)).map((error) => describe(error, schema)))]
  const field = first.keyword === 'required' ? 'config' : fieldName(first.instancePath)
  return `${field} ${reasons.join(' or ')}${templateAllowed ? ' (or a template)' : ''}`
}
