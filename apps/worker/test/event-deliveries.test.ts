import { DelayedError } from 'bullmq'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { encryptSecret, keyringOf } from '@switchboard/core/encryption'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { eventDeliveriesProcessor } from '../src/processors/event-deliveries.ts'
import { createWorkerTestContext, takeJob, TOKEN } from './context.ts'

// The subscription delivery processor (processors/event-deliveries.ts) on real jobs of the file's
// queue: one attempt per run of the job, signed, and the wait before the next one a delayed job.
const context = await createWorkerTestContext(t, { HTTP_REQUEST_ALLOW_PRIVATE: 'true' })
const { db } = context.database
const processor = eventDeliveriesProcessor(context)

/** The subscriber: `/down` answers 503, anything else 200. */
const sink = await startDeliverySink(t, { answer: ({ path }) => path === '/down' ? { status: 503 } : {} })

const [owner] = await db.execute<{ id: string }>(sql`insert into users (id, email, password_hash) values ('owner', 'owner@example.com', 'x') returning id`)
const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`

/** A pending delivery of a workflow.run.failed event to a subscription at `path` of the sink, and its job. */
async function queuedDelivery (path: string): Promise<string> {
  const [subscription] = await db.execute<{ id: string }>(sql`
    insert into event_subscriptions (id, user_id, url, events, secret_encrypted)
    values (gen_random_uuid()::text, ${owner!.id}, ${sink.url + path}, array['workflow.run.failed'], ${encryptSecret(keyringOf(context.config), secret)})
    returning id`)
  const [delivery] = await db.execute<{ id: string }>(sql`
    insert into event_deliveries (id, subscription_id, event_id, event_name, payload, next_attempt_at)
    values (gen_random_uuid()::text, ${subscription!.id}, gen_random_uuid()::text, 'workflow.run.failed', ${JSON.stringify({ runId: 'r1' })}::jsonb, now())
    returning id`)
  await context.queues['event-deliveries'].add('event-delivery', { deliveryId: delivery!.id, userId: owner!.id }, { jobId: delivery!.id })
  return delivery!.id
}
const readDelivery = async (id: string) => (await db.execute<{ status: string, attempts: number }>(sql`select status, attempts from event_deliveries where id = ${id}`))[0]!

t.test('a subscriber that answers 200: the delivery succeeds in one attempt, signed, and its job completes', async (t) => {
  const deliveryId = await queuedDelivery('/hook')
  const job = await takeJob(t, context, 'event-deliveries')
  t.equal(await processor(job, TOKEN), undefined)
  t.same(await readDelivery(deliveryId), { status: 'succeeded', attempts: 1 })
  const [received] = sink.deliveries.filter((delivery) => delivery.path === '/hook')
  t.equal(received?.method, 'POST')
  t.equal(received?.headers['webhook-id'], deliveryId)
  t.match(received?.headers['webhook-signature'], /^v1,/)
  t.match(JSON.parse(received!.body), { type: 'workflow.run.failed', data: { runId: 'r1' } })
})

t.test('a subscriber that answers 503: the attempt is recorded, the delivery stays pending and its job is moved to delayed', async (t) => {
  const deliveryId = await queuedDelivery('/down')
  const job = await takeJob(t, context, 'event-deliveries')
  await t.rejects(processor(job, TOKEN), DelayedError)
  t.equal(await job.getState(), 'delayed')
  t.same(await readDelivery(deliveryId), { status: 'pending', attempts: 1 })
  const [attempt] = await db.execute<{ statusCode: number }>(sql`select status_code as "statusCode" from event_delivery_attempts where delivery_id = ${deliveryId}`)
  t.equal(attempt?.statusCode, 503)
})
