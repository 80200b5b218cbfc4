import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/** What a caller's X-Request-Id may be to be kept: a token that cannot forge log lines or grow a job. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The caller's request id when it is a sane token, else a new UUID. */
export function requestIdOf (header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID()
}

/**
 * Every answer carries X-Request-Id: the caller's, or the one made for it. The same id is on the
 * api's log lines of the request, in the job of a run it starts and on that run's lines.
 */
async function requestId (fastify: FastifyInstance): Promise<void> {
  fastify.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })
}

export default fp(requestId, { name: 'request-id' })
