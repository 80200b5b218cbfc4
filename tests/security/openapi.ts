/** The parts of a JSON schema (OpenAPI 3.0 dialect, as /docs/json writes the routes' TypeBox schemas) the fuzzer reads. */
export interface JsonSchema {
  type?: string | string[]
  nullable?: boolean
  enum?: unknown[]
  const?: unknown
  anyOf?: JsonSchema[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  items?: JsonSchema
  minItems?: number
  maxItems?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  format?: string
  minimum?: number
  maximum?: number
}

export interface Operation {
  method: string
  /** Fastify's form: `/api/automation/workflows/:id`. */
  path: string
  pathParams: string[]
  query: Record<string, JsonSchema>
  /** The JSON body schema, when the route declares one. */
  body?: JsonSchema
  /** An explicitly empty security list marks a public route (login, webhooks, health). */
  isPublic: boolean
  /** Its 200 is an event stream (text/event-stream), which stays open: no answer ever completes. */
  streams: boolean
}

interface OpenApiOperation {
  parameters?: Array<{ in: string, name: string, schema: JsonSchema }>
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> }
  security?: unknown[]
  responses?: Record<string, { content?: Record<string, unknown> }>
}

/** Every operation of the OpenAPI document, in its order. */
export function operationsOf (document: { paths: Record<string, Record<string, OpenApiOperation>> }): Operation[] {
  return Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => {
    const parameters = operation.parameters ?? []
    return {
      method: method.toUpperCase(),
      path: path.replace(/\{([^}]+)\}/g, ':$1'),
      pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
      query: Object.fromEntries(parameters.filter((p) => p.in === 'query').map((p) => [p.name, p.schema])),
      body: operation.requestBody?.content?.['application/json']?.schema,
      isPublic: Array.isArray(operation.security) && operation.security.length === 0,
      streams: operation.responses?.['200']?.content?.['text/event-stream'] !== undefined
    }
  }))
}
