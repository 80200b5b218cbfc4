import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { isCuid } from '@paralleldrive/cuid2'
import { runsRepository } from '@switchboard/core/repositories/runs'
import { startRun } from '@switchboard/core/services/runs'
import { errorResponses } from '../../schemas/common.ts'
import { idempotencyKeyOf } from './run-schemas.ts'

const WebhookAnswer = Type.Object({
  status: Type.Union([Type.Literal('received'), Type.Literal('ignored')]),
  runId: Type.Optional(Type.String())
})

const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json$/
const FORM_TYPE = 'application/x-www-form-urlencoded'

/** Repeated form fields become arrays, the way form parsers usually present them. */
function parseForm (text: string): Record<string, string | string[]> {
  const fields: Record<string, string | string[]> = {}
  for (const [key, value] of new URLSearchParams(text)) {
    const previous = fields[key]
    fields[key] = previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value]
  }
  return fields
}

/**
 * POST /api/automation/webhook/:workflowId (spec 4.13), public. Always 200 so that
 * workflow ids cannot be probed; 500 only when the run could not be started, so the
 * sender retries.
 */
const webhook: FastifyPluginAsyncTypebox = async (fastify) => {
  const repo = runsRepository(fastify.db)
  // verify_signature needs the exact bytes the sender signed, so every body is read as a
  // buffer here (this plugin only) and parsed by its content type.
  const rawBodies = new WeakMap<FastifyRequest, Buffer>()
  const parseJson = fastify.getDefaultJsonParser('error', 'error')

  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (request, raw: Buffer, done) => {
    rawBodies.set(request, raw)
    if (raw.length === 0) return done(null, null)
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
    const text = raw.toString('utf8')
    // Spec 4.13: the answer is always 200. A sender's broken JSON is kept as text (and its bytes
    // for verify_signature) rather than refused; so is JSON carrying __proto__, which is never parsed.
    if (JSON_TYPE.test(type)) return parseJson(request, text, (err, value) => { done(null, err === null ? value : text) })
    if (type === FORM_TYPE) return done(null, parseForm(text))
    done(null, text)
  })

  fastify.post('/api/automation/webhook/:workflowId', {
    config: { public: true },
    schema: {
      tags: ['runs'],
      security: [],
      params: Type.Object({ workflowId: Type.String() }),
      response: { 200: WebhookAnswer, ...errorResponses(400, 413, 500) }
    }
  }, async (request) => {
    const { workflowId } = request.params
    if (!isCuid(workflowId)) return { status: 'ignored' as const }
    const workflow = await repo.findTriggerTarget(workflowId)
    if (workflow === null || !workflow.isActive || workflow.triggerType !== 'WEBHOOK') return { status: 'ignored' as const }
    const { runId } = await startRun(fastify, {
      workflow,
      triggerData: { body: request.body ?? null, headers: { ...request.headers }, query: { ...(request.query as object) } },
      rawBody: rawBodies.get(request),
      idempotencyKey: idempotencyKeyOf(request.headers)
    })
    return { status: 'received' as const, runId }
  })
}

export default webhook
