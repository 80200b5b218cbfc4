import type { NodeType } from '../node-types.ts'
import type { NodeExecutor } from '../types.ts'
import { condition } from './condition.ts'
import { httpRequest } from './http-request.ts'
import { sendChatTemplate } from './send-chat-template.ts'
import { sendChat } from './send-chat.ts'
import { set } from './set.ts'
import { verifySignature } from './verify-signature.ts'
import { wait } from './wait.ts'

/** One executor per node type: a type without one (or with the wrong one) fails compilation here. */
export const nodeExecutors: { readonly [T in NodeType]: NodeExecutor<T> } = {
  send_chat: sendChat,
  send_chat_template: sendChatTemplate,
  http_request: httpRequest,
  condition,
  wait,
  set,
  verify_signature: verifySignature
}
