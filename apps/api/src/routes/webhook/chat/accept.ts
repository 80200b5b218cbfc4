import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ASSISTANT_MAIN, CHAT_DELIVERY_JOB, type ChatDeliveryJobData } from '@switchboard/core/queues'

/**
 * A delivery stored and queued on assistant-main (README, Inbound messages): the platform's
 * webhook's, and a sandbox number's played customer's (`id`: its sandbox delivery id), so that
 * both go the same way from here. Stored is accepted: a delivery whose job could not be queued is
 * queued by the worker's reconciler.
 */
export async function acceptDelivery (fastify: FastifyInstance, request: FastifyRequest, payload: unknown, id?: string): Promise<string> {
  // Within the request's deadline, or 503 and the sender retries. A row stored after that
  // answer is processed too: messages are stored once by wamid, so the retry changes nothing.
  const deliveryId = await request.deadline.race(fastify.chatDeliveries.create(payload, id), 'store the chat delivery')
  try {
    await request.deadline.race(
      fastify.queues[ASSISTANT_MAIN].add(CHAT_DELIVERY_JOB, { deliveryId } satisfies ChatDeliveryJobData, { jobId: deliveryId }),
      'queue the chat delivery'
    )
  } catch (err) {
    request.log.warn({ err, deliveryId }, 'chat delivery stored but not queued: the reconciler will queue it')
  }
  return deliveryId
}
