import { Type } from 'typebox'
import { recipientLabel } from '../../chat/sender.ts'
import { CHAT_FIELDS, CHAT_TRAITS, checkRecipient, recipientOf, sendRetryably } from './chat-send.ts'
import { optionalString, requiredString } from './config.ts'
import { defineNode, templated } from './definition.ts'

/** Free text through one of the workflow owner's chat accounts, with the node's idempotency key. */
export const sendChat = defineNode({
  type: 'send_chat',
  category: 'Chat',
  description: 'Sends a text message to a chat number (inside the 24-hour window of the conversation).',
  config: {
    phone: CHAT_FIELDS.phone,
    contactId: CHAT_FIELDS.contactId,
    text: templated(Type.String({ minLength: 1, maxLength: 4096, description: 'The message text.' })),
    accountId: CHAT_FIELDS.accountId,
    replyToId: Type.Optional(templated(Type.String({ description: 'The wamid of a message this one replies to.' })))
  },
  example: { phone: '{{triggerData.phone}}', text: 'Hi {{triggerData.name}}' },
  traits: CHAT_TRAITS,
  validate (config) {
    checkRecipient(config, true)
  },
  async execute ({ config, run, deps, beforeEffect, attempt, idempotencyKey, signal }) {
    const input = {
      userId: run.userId,
      run,
      ...recipientOf(config),
      text: requiredString(config, 'text'),
      accountId: optionalString(config, 'accountId'),
      replyToId: optionalString(config, 'replyToId')
    }
    await beforeEffect(`Sending chat message to ${recipientLabel(input)} (attempt ${attempt})`)
    const sent = await sendRetryably(async () => await deps.chat.sendText(input, { idempotencyKey, signal }))
    return { output: { wamid: sent.wamid, kind: 'text', to: sent.to } }
  }
})
