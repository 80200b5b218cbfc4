import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { answerClientError } from './errors.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** How long the route may take to receive its whole request; REQUEST_TIMEOUT_MS unless set. */
    requestTimeoutMs?: number
  }
}

/** Every route's time to receive its whole request (slow clients must not hold sockets), unless it sets its own. */
const REQUEST_TIMEOUT_MS = 30_000

/**
 * The longest a route sets (the contacts' CSV import, README: Contacts and consent), and so Node's
 * own `requestTimeout`, which knows no routes: a shorter limit is this plugin's.
 */
export const LONGEST_REQUEST_TIMEOUT_MS = 600_000

const timedOut = (): Error => Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' })

/**
 * Each route's request timeout: a request whose body has not all arrived by its route's limit is
 * answered as Node answers its own timeout (408 `REQUEST_TIMEOUT`, the connection closed).
 */
async function requestTimeout (fastify: FastifyInstance): Promise<void> {
  fastify.addHook('onRequest', async (request, reply) => {
    const limitMs = request.routeOptions.config.requestTimeoutMs ?? REQUEST_TIMEOUT_MS
    if (request.raw.complete || limitMs >= LONGEST_REQUEST_TIMEOUT_MS) return
    const timer = setTimeout(() => {
      if (!request.raw.complete && !reply.sent) answerClientError(timedOut(), request.raw.socket)
    }, limitMs)
    reply.raw.once('close', () => { clearTimeout(timer) })
  })
}

export default fp(requestTimeout, { name: 'request-timeout' })
