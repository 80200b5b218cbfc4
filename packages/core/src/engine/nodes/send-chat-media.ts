import { Type } from 'typebox'
import { MEDIA_KINDS, MEDIA_LIMITS } from '../../chat/client.ts'
import { recipientLabel } from '../../chat/sender.ts'
import { CHAT_FIELDS, CHAT_TRAITS, checkRecipient, recipientOf, sendRetryably } from './chat-send.ts'
import { optionalString, requiredChoice } from './config.ts'
import { defineNode, oneOfAnyCase, templated } from './definition.ts'

/** An image, document, audio, video or sticker through one of the workflow owner's chat accounts, with the node's idempotency key. */
export const sendChatMedia = defineNode({
  type: 'send_chat_media',
  category: 'Chat',
  description: 'Sends an image, document, audio, video or sticker by https link or platform media id (inside the 24-hour window of the conversation).',
  config: {
    phone: CHAT_FIELDS.phone,
    contactId: CHAT_FIELDS.contactId,
    kind: templated(oneOfAnyCase(MEDIA_KINDS, { description: 'What the media is.' })),
    link: Type.Optional(templated(Type.String({ minLength: 1, maxLength: MEDIA_LIMITS.link, pattern: '^https://', description: 'A public https URL the platform fetches the media from; or give mediaId.' }))),
    mediaId: Type.Optional(templated(Type.String({ minLength: 1, maxLength: MEDIA_LIMITS.mediaId, description: 'The platform’s id of media it holds (a customer’s, {{triggerData.media.id}}); or give link.' }))),
    caption: Type.Optional(templated(Type.String({ minLength: 1, maxLength: MEDIA_LIMITS.caption, description: 'Text shown with an image, video or document.' }))),
    filename: Type.Optional(templated(Type.String({ minLength: 1, maxLength: MEDIA_LIMITS.filename, description: 'The file name a document is shown with.' }))),
    accountId: CHAT_FIELDS.accountId
  },
  example: { phone: '{{triggerData.phone}}', kind: 'image', link: 'https://example.com/menu.jpg', caption: 'Our menu' },
  traits: CHAT_TRAITS,
  validate (config) {
    checkRecipient(config, true)
  },
  async execute ({ config, run, deps, beforeEffect, attempt, idempotencyKey, signal }) {
    const kind = requiredChoice(config, 'kind', MEDIA_KINDS)
    const input = {
      userId: run.userId,
      run,
      ...recipientOf(config),
      media: {
        kind,
        link: optionalString(config, 'link'),
        mediaId: optionalString(config, 'mediaId'),
        caption: optionalString(config, 'caption'),
        filename: optionalString(config, 'filename')
      },
      accountId: optionalString(config, 'accountId')
    }
    await beforeEffect(`Sending chat ${kind} to ${recipientLabel(input)} (attempt ${attempt})`)
    const sent = await sendRetryably(async () => await deps.chat.sendMedia(input, { idempotencyKey, signal }))
    return { output: { wamid: sent.wamid, kind, to: sent.to } }
  }
})
