import { Type } from 'typebox'
import { FLOW_ACTIONS, INTERACTIVE_LIMITS as LIMITS, INTERACTIVE_TYPES } from '../../chat/interactive.ts'
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

export const FLOW = Type.Object({
  id: Type.Optional(text(LIMITS.flowId, 'The flow’s id on the platform (or its name).')),
  name: Type.Optional(text(LIMITS.flowName, 'The flow’s name, instead of its id.')),
  cta: text(LIMITS.flowCta, 'The label of the button that opens the flow (no emoji).'),
  screen: Type.Optional(text(LIMITS.flowScreen, 'Action navigate: the screen the flow opens at; absent: its first.')),
  data: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { minProperties: 1, description: `Action navigate, with screen: the screen’s input data, at most ${LIMITS.flowDataBytes} bytes as JSON and ${LIMITS.flowDataDepth} levels deep.` })),
  token: Type.Optional(text(LIMITS.flowToken, 'Comes back in the completed flow’s response as flow_token: which send it answers.')),
  action: Type.Optional(oneOfAnyCase(FLOW_ACTIONS, { default: 'navigate', description: 'navigate (open at screen) or data_exchange (the flow’s endpoint gives the first screen).' }))
}, {
  description: `Type flow: {id or name, cta (no emoji), action (navigate, data_exchange), screen and data (navigate only; data at most ${LIMITS.flowDataBytes} bytes as JSON, ${LIMITS.flowDataDepth} levels), token}; its completion comes back as triggerData.flowReply.`,
  examples: [{ id: '1234567890', cta: 'Book a table', screen: 'BOOKING', data: { guests: [1, 2, 3, 4] } }]
})

/** Reply buttons, a list or a flow through one of the workflow owner's chat accounts, with the node's idempotency key. */
export const sendChatInteractive = defineNode({
  type: 'send_chat_interactive',
  category: 'Chat',
  description: 'Sends a message with reply buttons (1–3), a list (10 rows at most) or a flow’s button (inside the 24-hour window); a tap comes back as triggerData.interactive, a completed flow as triggerData.flowReply.',
  config: {
    phone: CHAT_FIELDS.phone,
    contactId: CHAT_FIELDS.contactId,
    type: templated(oneOfAnyCase(INTERACTIVE_TYPES, { description: 'Reply buttons, a list opened by a button, or a flow opened by a button.' })),
    body: templated(text(LIMITS.body, 'The message text.')),
    header: Type.Optional(templated(text(LIMITS.header, 'A title above the text.'))),
    footer: Type.Optional(templated(text(LIMITS.footer, 'A line under the text.'))),
    buttons: Type.Optional(templated(Type.Array(BUTTON, { minItems: 1, maxItems: LIMITS.buttons, description: `Type button: 1 to ${LIMITS.buttons} buttons with unique ids.` }))),
    list: Type.Optional(templated(LIST)),
    flow: Type.Optional(templated(FLOW)),
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
        list: config.list,
        flow: config.flow
      },
      accountId: optionalString(config, 'accountId')
    }
    await beforeEffect(`Sending chat interactive message to ${recipientLabel(input)} (attempt ${attempt})`)
    const sent = await sendRetryably(async () => await deps.chat.sendInteractive(input, { idempotencyKey, signal }))
    return { output: { wamid: sent.wamid, kind: 'interactive', to: sent.to } }
  }
})
