import type { NodeExecutor } from '../types.ts'
import { sendRetryably } from './chat-send.ts'
import { optionalString, requiredString } from './config.ts'

/** Free text through one of the workflow owner's chat accounts, with the node's idempotency key. */
export const sendChat: NodeExecutor<'send_chat'> = {
  type: 'send_chat',
  async execute ({ config, run, deps, beforeEffect, attempt, idempotencyKey, signal }) {
    const input = {
      userId: run.userId,
      to: requiredString(config, 'phone'),
      text: requiredString(config, 'text'),
      accountId: optionalString(config, 'accountId'),
      replyToId: optionalString(config, 'replyToId')
    }
    await beforeEffect(`Sending chat message to ${input.to} (attempt ${attempt})`)
    const sent = await sendRetryably(async () => await deps.chat.sendText(input, { idempotencyKey, signal }))
    return { output: { wamid: sent.wamid, kind: 'text', to: sent.to } }
  }
}
