import type { FastifyInstance } from 'fastify'
import accounts from './accounts/index.ts'
import agents from './agents/index.ts'
import assistant from './assistant/index.ts'
import broadcasts from './broadcasts/index.ts'
import cannedReplies from './canned-replies/index.ts'
import consent from './consent/index.ts'
import contacts from './contacts/index.ts'
import conversations from './conversations/index.ts'
import events from './events/index.ts'
import knowledge from './knowledge/index.ts'
import labels from './labels/index.ts'
import messages from './messages/index.ts'
import sandbox from './sandbox/index.ts'
import send from './send/index.ts'
import templates from './templates/index.ts'
import { keyScopes } from '../key-scopes.ts'

/** /api/chat: linked accounts, and what each account sends and receives. */
export default async function chat (fastify: FastifyInstance): Promise<void> {
  fastify.addHook('onRoute', keyScopes('chat:read', 'chat:write'))
  await fastify.register(accounts, { prefix: '/accounts' })
  await fastify.register(agents, { prefix: '/agents' })
  await fastify.register(assistant, { prefix: '/accounts' })
  await fastify.register(broadcasts, { prefix: '/broadcasts' })
  await fastify.register(cannedReplies, { prefix: '/canned-replies' })
  await fastify.register(consent, { prefix: '/accounts' })
  await fastify.register(contacts, { prefix: '/contacts' })
  await fastify.register(conversations, { prefix: '/conversations' })
  await fastify.register(events, { prefix: '/events' })
  await fastify.register(knowledge, { prefix: '/accounts' })
  await fastify.register(labels, { prefix: '/labels' })
  await fastify.register(messages, { prefix: '/messages' })
  await fastify.register(sandbox, { prefix: '/accounts' })
  await fastify.register(send, { prefix: '/send' })
  await fastify.register(templates, { prefix: '/templates' })
}
