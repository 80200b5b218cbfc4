import { DelayedError, type Job } from 'bullmq'
import { chatAsks, chatDeliveryProcessor } from '@switchboard/core/chat'
import { wakeRun } from '@switchboard/core/engine'
import { ASSISTANT_TURN_JOB, type AssistantTurnJobData, type ChatDeliveryJobData } from '@switchboard/core/queues'
import { dispatchEvents, reactToInboundMessage } from '@switchboard/core/triggers'
import type { ProcessorFactory } from '../context.ts'

/**
 * Inbound chat platform deliveries (README, Inbound messages): stored, then given to whoever gets
 * it, in the order of the README's table "Who gets an inbound message": opt-out and opt-in keywords
 * (an opt-out also ends the conversation's `ask`), a run waiting at an `ask` of the conversation,
 * then KEYWORD and `chat.message.received` workflows, then the assistant. And the assistant's turns, one job per
 * conversation: a turn waiting for a tool run is delayed, never held by a worker slot. At most
 * half the queue's slots work turns at once (a slow model holds its slot for AI_TIMEOUT_MS), so
 * deliveries always have the other half.
 */
export const assistantMainProcessor: ProcessorFactory<'assistant-main'> = (context) => {
  const { config, logger, queues, assistant, consent } = context
  const db = context.database.db
  const turnSlots = Math.max(1, Math.floor(config.workerConcurrency / 2))
  let turnsActive = 0
  const events = { db, queues, logger, eventFanoutMax: config.limits.eventFanoutMax }
  const asks = chatAsks(db)
  const processDelivery = chatDeliveryProcessor({
    db,
    config,
    logger,
    // Committed already: an event this does not dispatch is the reconciler's (lostEventsDispatch).
    dispatchEvents: async (eventIds) => {
      try {
        await dispatchEvents(events, { ids: eventIds })
      } catch (err) {
        logger.warn({ err, eventIds }, 'chat events stored but not dispatched: the reconciler will dispatch them')
      }
    },
    onMessage: async (message) => {
      const consentKeyword = await consent.answer(message)
      if (consentKeyword !== null) {
        const exited = consentKeyword === 'optOut' ? await asks.exit(message.conversationId) : null
        if (exited !== null) await wakeRun(queues, exited.queue, exited.runId)
        return
      }
      // A reaction answers nothing: an `ask` waits on, and the assistant has no question to answer (README, Message kinds).
      const isReaction = message.type === 'reaction'
      const asked = isReaction ? { taken: false as const } : await asks.take(message)
      if (asked.taken) {
        if (asked.wake !== null) await wakeRun(queues, asked.wake.queue, asked.wake.runId)
        logger.debug({ conversationId: message.conversationId, answered: asked.answered }, 'inbound chat message taken by an ask')
        return
      }
      const { skipped, keywordMatched, ...started } = await reactToInboundMessage(events, message)
      if (started.eventRunIds.length > 0 || started.keywordRunIds.length > 0) {
        logger.info({ conversationId: message.conversationId, ...started }, 'inbound chat message started runs')
      }
      if (skipped > 0) {
        logger.warn({ conversationId: message.conversationId, skipped, eventFanoutMax: config.limits.eventFanoutMax }, 'inbound chat message reached more workflows than EVENT_FANOUT_MAX: the newest were not started')
      }
      if (!isReaction) await assistant.onInboundMessage({ conversationId: message.conversationId, messageId: message.messageId, keywordMatched })
    }
  })

  async function workTurns (job: Job, token: string | undefined): Promise<void> {
    const { conversationId, wake } = job.data as AssistantTurnJobData
    let delayMs: number | undefined
    if (turnsActive >= turnSlots) {
      delayMs = 250
    } else {
      turnsActive++
      try {
        delayMs = (await assistant.work(conversationId, { wake }))?.delayMs
      } finally {
        turnsActive--
      }
    }
    if (delayMs === undefined) return
    await job.moveToDelayed(Date.now() + delayMs, token)
    throw new DelayedError()
  }

  return async (job, token) => job.name === ASSISTANT_TURN_JOB
    ? await workTurns(job, token)
    : await processDelivery((job.data as ChatDeliveryJobData).deliveryId)
}
