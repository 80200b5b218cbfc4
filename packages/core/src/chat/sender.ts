/**
 * What the engine's chat nodes need from the chat service: the seam between
 * the workflow engine and the chat platform client.
 */
export interface ChatSendResult {
  /** The platform's message id (messages[0].id). */
  wamid: string
  to: string
}

export interface SendTextInput {
  /** The workflow owner: the accounts they can use are the candidates. */
  userId: string
  accountId?: string
  to: string
  text: string
  replyToId?: string
}

export interface SendTemplateInput {
  userId: string
  accountId?: string
  to: string
  templateName: string
  lang?: string
  components?: unknown[]
}

export interface ChatSender {
  sendText: (input: SendTextInput) => Promise<ChatSendResult>
  sendTemplate: (input: SendTemplateInput) => Promise<ChatSendResult>
}
