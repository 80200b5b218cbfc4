import { Type } from 'typebox'
import { INTERACTIVE_LIMITS as LIMITS, INTERACTIVE_TYPES } from '../../chat/interactive.ts'
import { recipientLabel } from '../../chat/sender.ts'
import { CHAT_FIELDS, CHAT_TRAITS, checkRecipient, recipientOf, sendRetryably } from './chat-send.ts'
import { optionalString, requiredChoice } from './config.ts'
import { defineNode, oneOfAnyCase, templated } from './definition.ts'

const text = (max: number, description: string) => Type.String({ minLength: 1, maxLength: max, description })

export const BUTTON = Type.Object({
  id: text(LIMITS.buttonId, 'What a tap sends back: triggerData.interactive.id, and a KEYWORD equal to it matches.'),
  title: text(LIMITS.buttonTitle, 'The button’s label.')
})

const ROW = Type.Object({
  id: text(LIMITS.rowId, 'What a tap sends back, as a button’s id.'),
  title: text(LIMITS.rowTitle, 'The row’s label.'),
  description: Type.Optional(text(LIMITS.rowDescription, 'A line under the label.'))
})

export const LIST = Type.Object({
  button: text(LIMITS.listButton, 'The label of the button that opens the list.'),
  sections: Type.Array(Type.Object({
    title: Type.Optional(text(LIMITS.sectionTitle, 'Required when there are several sections.')),
    rows: Type.Array(ROW, { minItems: 1, maxItems: LIMITS.rows })
  }), { minItems: 1, maxItems: LIMITS.sections, description: `At most ${LIMITS.rows} rows in all.` })
}, { description: 'Type list: the button that opens it and its sections of rows.' })

/** Reply buttons or a list through one of the workflow owner's chat accounts, with the node's idempotency key. */
export const sendChatInteractive = defineNode({
  type: 'send_chat_interactive',
  category: 'Chat',
  description: 'Sends a message with reply buttons (1–3) or a list (10 rows at most); a tap comes back as triggerData.interactive (inside the 24-hour window).',
  config: {
    phone: CHAT_FIELDS.phone,
    contactId: CHAT_FIELDS.contactId,
    type: templated(oneOfAnyCase(INTERACTIVE_TYPES, { description: 'Reply buttons, or a list opened by a button.' })),
    body: templated(text(LIMITS.body, 'The message text.')),
    header: Type.Optional(templated(text(LIMITS.header, 'A title above the text.'))),
    footer: Type.Optional(templated(text(LIMITS.footer, 'A line under the text.'))),
    buttons: Type.Optional(templated(Type.Array(BUTTON, { minItems: 1, maxItems: LIMITS.buttons, description: `Type button: 1 to ${LIMITS.buttons} buttons with unique ids.` }))),
    list: Type.Optional(templated(LIST)),
    accountId: CHAT_FIELDS.accountId
  },
  example: {
    phone: '{{triggerData.phone}}',
    type: 'button',
    body: 'How can we help?',
    buttons: [{ id: 'orders', title: 'My orders' }, { id: 'human', title: 'Talk to a person' }]
  },
  traits: CHAT_TRAITS,
  validate (config) {
    checkRecipient(config, true)
  },
  async execute ({ config, run, deps, beforeEffect, attempt, idempotencyKey, signal }) {
    const input = {
      userId: run.userId,
      run,
      ...recipientOf(config),
      interactive: {
        type: requiredChoice(config, 'type', INTERACTIVE_TYPES),
        body: config.body,
        header: config.header,
        footer: config.footer,
        buttons: config.buttons,
        list: config.list
      },
      accountId: optionalString(config, 'accountId')
    }
    await beforeEffect(`Sending chat interactive message to ${recipientLabel(input)} (attempt ${attempt})`)
    const sent = await sendRetryably(async () => await deps.chat.sendInteractive(input, { idempotencyKey, signal }))
    return { output: { wamid: sent.wamid, kind: 'interactive', to: sent.to } }
  }
})
