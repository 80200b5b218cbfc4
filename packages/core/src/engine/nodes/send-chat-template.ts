import type { NodeExecutor } from '../types.ts'
import { NodeError } from '../types.ts'
import { sendRetryably } from './chat-send.ts'
import { optionalString, requiredString } from './config.ts'

/** An approved template through one of the workflow owner's chat accounts, with the node's idempotency key. */
export const sendChatTemplate: NodeExecutor<'send_chat_template'> = {
  type: 'send_chat_template',
  async execute ({ config, run, deps, beforeEffect, attempt, idempotencyKey, signal }) {
    const templateName = requiredString(config, 'templateName')
    const components = config.components
    if (components !== undefined && components !== null && !Array.isArray(components)) {
      throw new NodeError('components must be an array')
    }
    const input = {
      userId: run.userId,
      to: requiredString(config, 'phone'),
      templateName,
      lang: optionalString(config, 'lang') ?? 'en_US',
      components: components ?? undefined,
      accountId: optionalString(config, 'accountId')
    }
    await beforeEffect(`Sending chat template ${templateName} to ${input.to} (attempt ${attempt})`)
    const sent = await sendRetryably(async () => await deps.chat.sendTemplate(input, { idempotencyKey, signal }))
    return { output: { wamid: sent.wamid, kind: 'template', to: sent.to, templateName } }
  }
}
