import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { DomainError } from '@switchboard/core/errors'

/**
 * How deeply a JSON body may nest objects and arrays (`{"a":[1]}` is 2 levels). Real payloads
 * stay far below it, and everything that handles a body afterwards recurses once per level:
 * JSON.stringify (jsonb parameters, responses) overflows V8's stack at a few thousand levels,
 * JSON.parse's reviver, template rendering and condition comparisons likewise.
 */
const MAX_JSON_DEPTH = 100

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d

/**
 * Whether JSON text nests objects and arrays deeper than MAX_JSON_DEPTH: one pass over the
 * text, no recursion, brackets inside strings ignored. Run before parsing, so a hostile body
 * never becomes a deep structure. Text that is not JSON may be misjudged, but parsing refuses it anyway.
 */
export function isNestedTooDeeply (text: string): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i)
    if (inString) {
      if (char === BACKSLASH) i++
      else if (char === QUOTE) inString = false
    } else if (char === QUOTE) {
      inString = true
    } else if (char === OPEN_BRACE || char === OPEN_BRACKET) {
      if (++depth > MAX_JSON_DEPTH) return true
    } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
      depth--
    }
  }
  return false
}

export const nestingTooDeep = (): DomainError =>
  new DomainError('BODY_TOO_DEEP', `Body nesting is too deep (max ${MAX_JSON_DEPTH} levels)`)

/**
 * The `application/json` parser of every route: Fastify's own (prototype-poisoning checks,
 * its 400 for empty and malformed bodies) behind the nesting bound.
 */
async function jsonBody (fastify: FastifyInstance): Promise<void> {
  const parseJson = fastify.getDefaultJsonParser('error', 'error')
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body: string, done) => {
    if (isNestedTooDeeply(body)) return done(nestingTooDeep(), undefined)
    parseJson(request, body, done)
  })
}

export default fp(jsonBody, { name: 'json-body' })
