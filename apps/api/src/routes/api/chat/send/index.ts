import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { errorResponses } from '../../../../schemas/common.ts'
import { SendContactsBody, SendInteractiveBody, SendLocationBody, SendMediaBody, SendResult, SendTemplateBody, SendTextBody } from './schemas.ts'

const sendErrors = errorResponses(400, 401, 404, 500, 502)

/** Every message sent through these routes is a person's: the caller's (an API key's, its owner's). */
const userSender = (request: FastifyRequest) => ({ type: 'user' as const, id: request.user.sub })

/** Text and template messages (README, Chat), and media and interactive messages: sends through the selected account and returns the platform's answer. */
const send: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/text', {
    schema: { tags: ['chat'], body: SendTextBody, response: { 200: SendResult, ...sendErrors } }
  }, async (request) => fastify.chat.sendText(await fastify.chatAccountFor(request), { ...request.body, sender: userSender(request) }))

  fastify.post('/template', {
    schema: { tags: ['chat'], body: SendTemplateBody, response: { 200: SendResult, ...sendErrors } }
  }, async (request) => fastify.chat.sendTemplate(await fastify.chatAccountFor(request), { ...request.body, sender: userSender(request) }))

  /** Within the 24-hour window, like text; stored with its caption (or `[image]`) and its link or media id. */
  fastify.post('/media', {
    schema: { tags: ['chat'], body: SendMediaBody, response: { 200: SendResult, ...sendErrors } }
  }, async (request) => {
    const { to, contactId, agentId, agentName, ...media } = request.body
    return fastify.chat.sendMedia(await fastify.chatAccountFor(request), { to, contactId, agentId, agentName, media, sender: userSender(request) })
  })

  /** Within the 24-hour window, like text; a tap comes back to workflows as `triggerData.interactive`. */
  fastify.post('/interactive', {
    schema: { tags: ['chat'], body: SendInteractiveBody, response: { 200: SendResult, ...sendErrors } }
  }, async (request) => {
    const { to, contactId, agentId, agentName, ...interactive } = request.body
    return fastify.chat.sendInteractive(await fastify.chatAccountFor(request), { to, contactId, agentId, agentName, interactive, sender: userSender(request) })
  })

  /** Within the 24-hour window; stored as `[location] <name>` with the place in `location` (README, Message kinds). */
  fastify.post('/location', {
    schema: { tags: ['chat'], body: SendLocationBody, response: { 200: SendResult, ...sendErrors } }
  }, async (request) => {
    const { to, contactId, agentId, agentName, ...location } = request.body
    return fastify.chat.sendLocation(await fastify.chatAccountFor(request), { to, contactId, agentId, agentName, location, sender: userSender(request) })
  })

  /** Within the 24-hour window; stored as `[contacts] <names>` with the cards in `contacts`. */
  fastify.post('/contacts', {
    schema: { tags: ['chat'], body: SendContactsBody, response: { 200: SendResult, ...sendErrors } }
  }, async (request) => fastify.chat.sendContacts(await fastify.chatAccountFor(request), { ...request.body, sender: userSender(request) }))
}

export default send
