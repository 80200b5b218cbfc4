import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { DomainError } from '@switchboard/core/errors'
import type { Deadline } from '@switchboard/core/timeout'
import { effectiveQuotas } from '@switchboard/core/users'
import { createCountedLimit } from './counted-limit.ts'

/**
 * The start quota (README, Quotas): the runs `/fire` and the inbound webhook may start for one
 * owner per minute (`runsPerMinute`), counted together whichever way they come. Beyond, 429
 * `Too many runs started; retry later` with Retry-After, before anything is stored. Runs
 * started by cron, events and keywords are never refused for it.
 */
export function createStartQuota (fastify: FastifyInstance) {
  const over = createCountedLimit(fastify)
  return async (request: FastifyRequest, reply: FastifyReply, owner: { userId: string, ownerQuotas: unknown }, deadline: Deadline): Promise<void> => {
    const max = effectiveQuotas(fastify.config.quotas, owner.ownerQuotas).runsPerMinute
    const retryAfter = await over(request, { key: `runs-started:${owner.userId}`, max, windowSeconds: 60 }, deadline)
    if (retryAfter === undefined) return
    reply.header('retry-after', retryAfter)
    throw new DomainError('TOO_MANY_RUNS', 'Too many runs started; retry later')
  }
}
