import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ATTRIBUTE_NAME } from '@switchboard/core/chat'
import { DomainError } from '@switchboard/core/errors'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import contactsImport from './import.ts'
import labels from './labels.ts'
import { Contact, ContactsQuery, UpdateContactBody } from './schemas.ts'

/**
 * The contacts of the selected account's number (README, Contacts and consent): listed, read and
 * changed by whoever can use the account; another number's contact is a 404.
 */
const contacts: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('', {
    schema: { tags: ['chat'], querystring: ContactsQuery, response: { 200: Type.Array(Contact), ...errorResponses(400, 401, 404) } }
  }, async (request) => fastify.contacts.list((await fastify.chatAccountFor(request)).phoneNumberId, request.query))

  fastify.get('/:id', {
    schema: { tags: ['chat'], params: IdParams, response: { 200: Contact, ...errorResponses(400, 401, 404) } }
  }, async (request) => fastify.contacts.get(request.params.id, (await fastify.chatAccountFor(request)).phoneNumberId))

  fastify.patch('/:id', {
    schema: { tags: ['chat'], params: IdParams, body: UpdateContactBody, response: { 200: Contact, ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    const badName = Object.keys(request.body.attributes ?? {}).find((name) => !ATTRIBUTE_NAME.test(name))
    if (badName !== undefined) throw new DomainError('VALIDATION_ERROR', `attributes: ${badName.slice(0, 100)} is not a name (letters, digits, _, - and .)`)
    return fastify.contacts.update(request.params.id, account.phoneNumberId, request.body)
  })

  await fastify.register(contactsImport)
  await fastify.register(labels)
}

export default contacts
