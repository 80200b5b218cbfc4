import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../../../schemas/common.ts'
import { SendInteractiveBody, SendMediaBody, SendResult, SendTemplateBody, SendTextBody } from './schemas.ts'

const sendErrors = errorResponses(400, 401, 404, 500, 502)

/** Text and template messages (README, Chat), and media and interactive messages: sends through the selected account and returns the platform's answer. */
const send: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/text', {
    schema: { tags: ['chat'], body: SendTextBody, response: { 200: SendResult, ...sendErrors } }
  }, async (request) => fastify.chat.sendText(await fastify.chatAccountFor(request), { ...request.body, pausesAssistant: true }))

  fastify.post('/template', {
    schema: { tags: ['chat'], body: SendTemplateBody, response: { 200: SendResult, ...sendErrors } }
  }, async (request) => fastify.chat.sendTemplate(await fastify.chatAccountFor(request), { ...request.body, pausesAssistant: true }))

  /** Within the 24-hour window, like text; stored with its caption (or `[image]`) and its link or media id. */
  fastify.post('/media', {
    schema: { tags: ['chat'], body: SendMediaBody, response: { 200: SendResult, ...sendErrors } }
  }, async (request) => {
    const { to, agentId, agentName, ...media } = request.body
    return fastify.chat.sendMedia(await fastify.chatAccountFor(request), { to, agentId, agentName, media, pausesAssistant: true })
  })

  /** Within the 24-hour window, like text; a tap comes back to workflows as `triggerData.interactive`. */
  fastify.post('/interactive', {
    schema: { tags: ['chat'], body: SendInteractiveBody, response: { 200: SendResult, ...sendErrors } }
  }, async (request) => {
    const { to, agentId, agentName, ...interactive } = request.body
    return fastify.chat.sendInteractive(await fastify.chatAccountFor(request), { to, agentId, agentName, interactive, pausesAssistant: true })
  })
}

export default send
