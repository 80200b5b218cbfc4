import { Type } from 'typebox'
import { TEMPLATE_PARAMETER_LIMITS } from '../../chat/template-components.ts'
import { NodeError } from '../types.ts'
import { recipientLabel } from '../../chat/sender.ts'
import { CHAT_FIELDS, CHAT_TRAITS, checkRecipient, recipientOf, sendRetryably } from './chat-send.ts'
import { optionalString, requiredString } from './config.ts'
import { defineNode, templated } from './definition.ts'

/** An approved template through one of the workflow owner's chat accounts, with the node's idempotency key. */
export const sendChatTemplate = defineNode({
  type: 'send_chat_template',
  category: 'Chat',
  description: 'Sends an approved message template: the way to start a conversation outside the 24-hour window.',
  config: {
    phone: CHAT_FIELDS.phone,
    contactId: CHAT_FIELDS.contactId,
    templateName: templated(Type.String({ minLength: 1, maxLength: 512, description: 'The approved template’s name.' })),
    lang: Type.Optional(templated(Type.String({ minLength: 1, maxLength: 16, default: 'en_US', description: 'The template’s language code.' }))),
    components: Type.Optional(templated(Type.Array(Type.Unknown(), {
      maxItems: TEMPLATE_PARAMETER_LIMITS.components,
      description: 'The template’s parameters, as the platform takes them: header (text, or image, video, document by link), body variables and buttons (sub_type url, quick_reply or copy_code, with index); checked once rendered, a blank one refused.'
    }))),
    accountId: CHAT_FIELDS.accountId
  },
  example: { phone: '{{triggerData.phone}}', templateName: 'hello_world', lang: 'en_US' },
  traits: CHAT_TRAITS,
  validate (config) {
    checkRecipient(config, true)
  },
  async execute ({ config, run, deps, beforeEffect, attempt, idempotencyKey, signal }) {
    const templateName = requiredString(config, 'templateName')
    const components = config.components
    if (components !== undefined && components !== null && !Array.isArray(components)) {
      throw new NodeError('components must be an array')
    }
    const input = {
      userId: run.userId,
      run,
      ...recipientOf(config),
      templateName,
      lang: optionalString(config, 'lang') ?? 'en_US',
      components: components ?? undefined,
      accountId: optionalString(config, 'accountId')
    }
    await beforeEffect(`Sending chat template ${templateName} to ${recipientLabel(input)} (attempt ${attempt})`)
    const sent = await sendRetryably(async () => await deps.chat.sendTemplate(input, { idempotencyKey, signal }))
    return { output: { wamid: sent.wamid, kind: 'template', to: sent.to, templateName } }
  }
})
