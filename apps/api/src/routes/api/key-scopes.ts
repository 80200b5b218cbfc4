import type { RouteOptions } from 'fastify'
import type { ApiKeyScope } from '@switchboard/core/db'

const READ_METHODS = new Set(['GET', 'HEAD'])

/**
 * An `onRoute` hook for a route group: the API key scope each of its routes needs (README,
 * API keys), `read` for GET and HEAD, `write` for the rest, unless the route names its own
 * `config.scope`. A route left without one (a group that adds no hook) is closed to keys.
 * The scope is written on the route's OpenAPI operation as `x-api-key-scope`.
 */
export function keyScopes (read: ApiKeyScope, write: ApiKeyScope) {
  return (route: RouteOptions): void => {
    const methods = [route.method].flat()
    const scope = route.config?.scope ?? (methods.every((method) => READ_METHODS.has(method)) ? read : write)
    route.config = { ...route.config, scope }
    // Shown on the operation in /docs, where clients (and the access-matrix test) read it.
    route.schema = { ...route.schema, 'x-api-key-scope': scope }
  }
}
