import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import querystring from 'fast-querystring'
import { DomainError, isStoreUnavailable } from '@switchboard/core/errors'
import { webhookAnswers } from '@switchboard/core/observability'
import { isNestedTooDeeply } from '../../../../plugins/json-body.ts'
import { errorResponses } from '../../../../schemas/common.ts'
import { checkIdParam } from '../../../../schemas/ids.ts'
import { idempotencyKeyOf } from '../runs/schemas.ts'
import { createCountedLimit } from '../counted-limit.ts'
import { createStartQuota } from '../start-quota.ts'
import { WebhookAnswer, WebhookParams } from './schemas.ts'

const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json$/
const FORM_TYPE = 'application/x-www-form-urlencoded'

/**
 * More fields than a form sender posts; a body with more is kept as text rather than turned
 * into an object of hundreds of thousands of keys (1 MiB of `a&` would be 512 Ki fields).
 */
const MAX_FORM_FIELDS = 1000

/** Whether `text` has more than MAX_FORM_FIELDS `&`-separated parts. */
function hasTooManyFields (text: string): boolean {
  let separators = 0
  for (let at = text.indexOf('&'); at !== -1; at = text.indexOf('&', at + 1)) {
    if (++separators >= MAX_FORM_FIELDS) return true
  }
  return false
}

/**
 * The answer when the run cannot be started (README, Runs: 500 `Internal Server Error`, the
 * sender retries), also when Postgres or Redis is down: never the 503 other routes give.
 */
const notStarted = (cause: unknown): Error => Object.assign(new Error('Webhook run not started: a store is unavailable'), { cause, statusCode: 500 })

/**
 * POST /api/automation/webhook/:workflowId (README, Runs), public. Always 200 so that
 * workflow ids cannot be probed; 500 only when the run could not be started, so the
 * sender retries: within REQUEST_DEADLINE_MS, and then no run exists; 429 with
 * Retry-After beyond the workflow's own `webhookRateLimit`, which its owner chose.
 */
const webhook: FastifyPluginAsyncTypebox = async (fastify) => {
  const parseJson = fastify.getDefaultJsonParser('error', 'error')
  const overRateLimit = createCountedLimit(fastify)
  const checkStartQuota = createStartQuota(fastify)

  /**
   * The body as triggerData holds it. The answer is always 200 (README, Runs), so what cannot be
   * parsed is kept as text rather than refused: broken JSON, JSON nested too deeply, JSON
   * carrying __proto__ (never parsed), a form with too many fields.
   */
  const bodyOf = async (request: FastifyRequest, raw: Buffer): Promise<unknown> => {
    if (raw.length === 0) return null
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
    const text = raw.toString('utf8')
    if (JSON_TYPE.test(type)) {
      if (isNestedTooDeeply(text)) return text
      return new Promise((resolve) => { parseJson(request, text, (err, value) => { resolve(err === null ? value : text) }) })
    }
    // Fastify's own query string parser: linear, repeated fields become arrays, no prototype.
    if (type === FORM_TYPE) return hasTooManyFields(text) ? text : querystring.parse(text)
    return text
  }

  // verify_signature needs the exact bytes the sender signed, so every body is kept as a
  // buffer here (this plugin only) and parsed only once the workflow is known to take it.
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, raw: Buffer, done) => { done(null, raw) })

  // A malformed id is ignored like an unknown one, before the body is looked at.
  fastify.addHook('preHandler', checkIdParam('workflowId', (reply) => {
    webhookAnswers.inc({ status: 'ignored' })
    return reply.send({ status: 'ignored' })
  }))

  fastify.post('/:workflowId', {
    config: { public: true },
    schema: {
      tags: ['runs'],
      security: [],
      params: WebhookParams,
      response: { 200: WebhookAnswer, ...errorResponses(400, 413, 429, 500) }
    }
  }, async (request, reply) => {
    const { deadline } = request
    const triggerDataOf = async () => {
      const rawBody = Buffer.isBuffer(request.body) ? request.body : undefined
      const body = rawBody === undefined ? null : await bodyOf(request, rawBody)
      return { rawBody, triggerData: { body, headers: { ...request.headers }, query: { ...(request.query as object) } } }
    }
    try {
      const workflow = await deadline.race(fastify.triggers.findTarget(request.params.workflowId), 'find the workflow')
      if (workflow === null || workflow.triggerType !== 'WEBHOOK') {
        webhookAnswers.inc({ status: 'ignored' })
        return { status: 'ignored' as const }
      }
      // A workflow listening for a test request (README, The workflow builder): read by the lookup above, so free otherwise.
      const capturing = workflow.testCaptureUntil !== null && workflow.testCaptureUntil.getTime() > Date.now()
      if (!workflow.isActive) {
        // Captured, though an inactive workflow starts no run and answers as one that does not exist (README, Runs).
        if (capturing) await deadline.race(fastify.workflows.captureTestRequest(workflow.id, (await triggerDataOf()).triggerData), 'capture the test request')
        webhookAnswers.inc({ status: 'ignored' })
        return { status: 'ignored' as const }
      }
      // The workflow's limit, counted before anything is parsed or stored: a refused request creates nothing.
      if (workflow.webhookRateLimit !== null) {
        const retryAfter = await overRateLimit(request, { key: `webhook:${workflow.id}`, ...workflow.webhookRateLimit }, deadline)
        if (retryAfter !== undefined) {
          webhookAnswers.inc({ status: 'rate_limited' })
          reply.header('retry-after', retryAfter)
          throw new DomainError('TOO_MANY_REQUESTS', `Too many webhook requests for this workflow, retry in ${retryAfter} second${retryAfter === 1 ? '' : 's'}`)
        }
      }
      try {
        await checkStartQuota(request, reply, workflow, deadline)
      } catch (err) {
        webhookAnswers.inc({ status: 'rate_limited' })
        throw err
      }
      const { rawBody, triggerData } = await triggerDataOf()
      const { runId } = await fastify.runs.start({
        workflow,
        triggerData,
        rawBody,
        idempotencyKey: idempotencyKeyOf(request.headers),
        requestId: request.id
      }, deadline)
      // After the run is committed: a capture that fails must not answer 500, or the sender's retry would start the run again.
      if (capturing) {
        await deadline.race(fastify.workflows.captureTestRequest(workflow.id, triggerData), 'capture the test request')
          .catch((err: unknown) => { request.log.warn({ err, workflowId: workflow.id }, 'test request not captured') })
      }
      webhookAnswers.inc({ status: 'received' })
      return { status: 'received' as const, runId }
    } catch (err) {
      throw isStoreUnavailable(err) ? notStarted(err) : err
    }
  })
}

export default webhook
