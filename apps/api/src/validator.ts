import { Ajv, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchema, FastifySchemaCompiler } from 'fastify'

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const common: Options = {
  useDefaults: true,
  // Unknown fields are dropped, never stored (contract section 3).
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

export const validatorCompiler: FastifySchemaCompiler<FastifySchema> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? body : textParts).compile(schema as object)
