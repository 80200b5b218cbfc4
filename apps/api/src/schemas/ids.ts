import type { FastifyReply, FastifyRequest } from 'fastify'
import { isCuid } from '@paralleldrive/cuid2'

/**
 * Ids are cuid2, and a malformed one answers like an unknown one (README, Conventions: 404,
 * never 400 or 500), so params schemas set no pattern: this hook is the one check. A route
 * group adds it once; it runs after validation (a bad body still answers 400 first, as it
 * would with an unknown id) and before any handler, so no handler, service or repository
 * checks the id again.
 */
export function checkIdParam (param: string, answerMalformed: (reply: FastifyReply) => unknown) {
  return async function checkId (request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const id = (request.params as Record<string, string | undefined> | undefined)?.[param]
    if (id !== undefined && !isCuid(id)) return answerMalformed(reply)
  }
}
