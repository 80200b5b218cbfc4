import type { NodeExecutor } from '../types.ts'
import { optionalString, requiredString } from './config.ts'

/** Free text through one of the workflow owner's chat accounts. */
export const sendChat: NodeExecutor<'send_chat'> = {
  type: 'send_chat',
  async execute ({ config, run, deps, beforeEffect }) {
    const input = {
      userId: run.userId,
      to: requiredString(config, 'phone'),
      text: requiredString(config, 'text'),
      accountId: optionalString(config, 'accountId'),
      replyToId: optionalString(config, 'replyToId')
    }
    await beforeEffect(`Sending chat message to ${input.to}`)
    const sent = await deps.chat.sendText(input)
    return { output: { wamid: sent.wamid, kind: 'text', to: sent.to } }
  }
}
