import { chatDeliveryProcessor } from '@switchboard/core/chat'
import { reactToInboundMessage } from '@switchboard/core/triggers'
import type { ProcessorFactory } from '../context.ts'

/** Inbound chat platform deliveries (contract, Queues): stored, then events and KEYWORD workflows started. */
export const assistantMainProcessor: ProcessorFactory<'assistant-main'> = (context) => {
  const { config, logger, queues } = context
  const db = context.database.db
  const processDelivery = chatDeliveryProcessor({
    db,
    config,
    logger,
    onMessage: async (message) => {
      const { skipped, ...started } = await reactToInboundMessage({ db, queues, eventFanoutMax: config.limits.eventFanoutMax }, message)
      if (started.eventRunIds.length > 0 || started.keywordRunIds.length > 0) {
        logger.info({ conversationId: message.conversationId, ...started }, 'inbound chat message started runs')
      }
      if (skipped > 0) {
        logger.warn({ conversationId: message.conversationId, skipped, eventFanoutMax: config.limits.eventFanoutMax }, 'inbound chat message reached more workflows than EVENT_FANOUT_MAX: the newest were not started')
      }
    }
  })
  return async (job) => processDelivery(job.data.deliveryId)
}
