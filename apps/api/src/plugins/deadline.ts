import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { Deadline } from '@switchboard/core/timeout'

declare module 'fastify' {
  interface FastifyRequest {
    /** REQUEST_DEADLINE_MS from the request's arrival: what `/fire`, the inbound webhook and the token check answer within. */
    deadline: Deadline
  }
}

/** Of the deadline, what is kept for writing the answer once the last step gave up. */
const ANSWER_MARGIN_MS = 100

/** Each request's deadline, set when it arrives, before its body is read or its token checked. */
async function deadline (fastify: FastifyInstance): Promise<void> {
  const { requestDeadlineMs } = fastify.config.timeouts
  fastify.decorateRequest('deadline', null as unknown as Deadline)
  fastify.addHook('onRequest', async (request) => {
    request.deadline = Deadline.after(requestDeadlineMs - ANSWER_MARGIN_MS)
  })
}

export default fp(deadline, { name: 'deadline', dependencies: ['context'] })
