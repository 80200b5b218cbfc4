import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../../../schemas/common.ts'
import { SendResult, SendTemplateBody, SendTextBody } from './schemas.ts'

const sendErrors = errorResponses(400, 401, 404, 500, 502)

/** Spec 4.2 and 4.4: sends through the selected account and returns the platform's answer. */
const send: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/text', {
    schema: { tags: ['chat'], body: SendTextBody, response: { 200: SendResult, ...sendErrors } }
  }, async (request) => fastify.chat.sendText(await fastify.chatAccountFor(request), { ...request.body, pausesAssistant: true }))

  fastify.post('/template', {
    schema: { tags: ['chat'], body: SendTemplateBody, response: { 200: SendResult, ...sendErrors } }
  }, async (request) => fastify.chat.sendTemplate(await fastify.chatAccountFor(request), { ...request.body, pausesAssistant: true }))
}

export default send
