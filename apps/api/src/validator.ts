import { Ajv, type Options, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchema, FastifySchemaCompiler } from 'fastify'

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const common: Options = {
  useDefaults: true,
  // Unknown fields are dropped, never stored (README, Conventions).
  removeAdditional: true,
  allErrors: false,
  // The error formatter reads a field's `errorMessage` from its schema.
  verbose: true,
  keywords: ['errorMessage']
}

function create (options: Options): Ajv {
  const ajv = new Ajv({ ...common, ...options })
  addFormats(ajv)
  return ajv
}

/**
 * Query strings, params and headers are text, so their values are coerced to
 * the schema's types (`?isActive=true`); bodies are JSON and keep their types,
 * so `{"name": 5}` is refused instead of stored as "5".
 */
const textParts = create({ coerceTypes: 'array' })
const body = create({ coerceTypes: false })

const isInfinite = (value: unknown): boolean =>
  Array.isArray(value) ? value.some(isInfinite) : typeof value === 'number' && !Number.isFinite(value)

/**
 * AJV coerces the text `1e999` (or `Infinity`) to Infinity, passes it as an
 * integer and skips `minimum`/`maximum`, which cannot compare it: `?limit=1e999`
 * would reach SQL. Text parts are flat objects, so their values are checked here.
 */
function refusingInfinity (validate: ValidateFunction): ValidateFunction {
  const checked = ((data: unknown) => {
    checked.errors = null
    if (!validate(data)) {
      checked.errors = validate.errors
      return false
    }
    const field = Object.entries(data as Record<string, unknown>).find(([, value]) => isInfinite(value))?.[0]
    if (field === undefined) return true
    checked.errors = [{ instancePath: `/${field}`, schemaPath: '', keyword: 'type', params: {}, message: 'must be a finite number' }]
    return false
  }) as ValidateFunction
  return checked
}

export const validatorCompiler: FastifySchemaCompiler<FastifySchema> = ({ schema, httpPart }) =>
  httpPart === 'body' ? body.compile(schema as object) : refusingInfinity(textParts.compile(schema as object))
