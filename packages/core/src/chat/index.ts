/** Chat: the platform client, accounts, conversations and messages, the window rule, inbound deliveries and sending. */
export { accountNotFound, DEFAULT_ACCOUNT_ID, type UsableChatAccount } from './accounts.ts'
export { chatAccountsRepository, type ChatAccountChanges } from './accounts-repository.ts'
export { createChatClient } from './client.ts'
export { CONVERSATION_FILTERS, CONVERSATION_SORTS, conversationsRepository } from './conversations.ts'
export { chatDeliveriesRepository } from './deliveries-repository.ts'
export { chatDeliveryProcessor, chatDeliveryRequeue } from './inbound.ts'
export { createChatSender } from './sender.ts'
export { createChatService, type ChatService } from './sending.ts'
