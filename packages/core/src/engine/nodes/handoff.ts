import { Type } from 'typebox'
import { LABEL_BOUNDS } from '../../chat/labels.ts'
import { NOTE_BOUNDS } from '../../chat/notes.ts'
import { CONVERSATION_PRIORITIES } from '../../db/schema/chat.ts'
import { NodeError } from '../types.ts'
import { recipientLabel } from '../../chat/sender.ts'
import { CHAT_TRAITS, checkRecipient, CUSTOMER_FIELDS, customerOf } from './chat-send.ts'
import { optionalChoice, optionalString, requiredString } from './config.ts'
import { defineNode, oneOfAnyCase, templated } from './definition.ts'

/** The rendered `labels`: a list of 1 to 50 characters each, at most 50. */
function labelsOf (config: Record<string, unknown>): string[] {
  const value = config.labels
  if (value === undefined || value === null) return []
  if (!Array.isArray(value) || value.length > LABEL_BOUNDS.perRecord || !value.every((label) => typeof label === 'string' && label !== '' && label.length <= LABEL_BOUNDS.chars)) {
    throw new NodeError(`labels must be at most ${LABEL_BOUNDS.perRecord} labels of 1 to ${LABEL_BOUNDS.chars} characters`)
  }
  return value as string[]
}

/**
 * Hands the customer's conversation to a person (README, Conversations: Handoff): assigned, as the
 * API's assignment does (which pauses the assistant), labelled, prioritised, with a private note
 * of the workflow. The note's id comes from the node's idempotency key: a node run again after a
 * crash stores it once, and the rest of the change is the same again.
 */
export const handoff = defineNode({
  type: 'handoff',
  category: 'Chat',
  description: 'Hands a chat customer’s conversation to a person: assigns it (pausing the assistant), adds labels, sets its priority and leaves a private note.',
  config: {
    phone: CUSTOMER_FIELDS.phone,
    contactId: CUSTOMER_FIELDS.contactId,
    accountId: CUSTOMER_FIELDS.accountId,
    assignTo: templated(Type.String({ minLength: 1, maxLength: 200, description: 'A user who can use the account (their id), or least_busy: of those, the one with the fewest open conversations assigned, ties broken by email.' })),
    labels: Type.Optional(templated(Type.Array(Type.String({ minLength: 1, maxLength: LABEL_BOUNDS.chars }), { maxItems: LABEL_BOUNDS.perRecord, description: 'Labels added to the conversation’s own.' }))),
    priority: Type.Optional(oneOfAnyCase(CONVERSATION_PRIORITIES, { description: 'The conversation’s priority; unchanged when absent.' })),
    note: Type.Optional(templated(Type.String({ maxLength: NOTE_BOUNDS.textChars, description: `A private note on the conversation, never sent to the customer; @email mentions a user (at most ${NOTE_BOUNDS.textChars} characters once rendered).` })))
  },
  example: { assignTo: 'least_busy', labels: ['sales'], priority: 'high', note: 'Asked for a quote: {{triggerData.text}}' },
  // It changes the conversation the inbox shows: the chat nodes' traits.
  traits: CHAT_TRAITS,
  validate (config) {
    checkRecipient(config, false)
  },
  async execute ({ config, run, deps, beforeEffect, log, attempt, idempotencyKey }) {
    const note = optionalString(config, 'note')
    if (note !== undefined && note.length > NOTE_BOUNDS.textChars) {
      throw new NodeError(`note is ${note.length} characters once rendered: at most ${NOTE_BOUNDS.textChars}`)
    }
    const input = {
      userId: run.userId,
      ...customerOf(config, run.triggerData),
      assignTo: requiredString(config, 'assignTo'),
      labels: labelsOf(config),
      priority: optionalChoice(config, 'priority', CONVERSATION_PRIORITIES),
      note,
      runId: run.id
    }
    await beforeEffect(`Handing the conversation with ${recipientLabel(input)} to ${input.assignTo} (attempt ${attempt})`)
    const handed = await deps.chat.handoff(input, { idempotencyKey })
    log('INFO', `Conversation ${handed.conversationId} assigned to ${handed.assignedTo}`)
    return { output: handed }
  }
})
