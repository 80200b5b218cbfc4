import { DelayedError } from 'bullmq'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { fakeChatEnv, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { chatBroadcastsProcessor } from '../src/processors/chat-broadcasts.ts'
import { createWorkerTestContext, takeJob, TOKEN } from './context.ts'

// The broadcast processor (processors/chat-broadcasts.ts) on real jobs of the file's queue and the
// fake chat platform: a broadcast sends what is due and ends, and one waiting (its sendAt, a
// recipient backing off) re-delays its own job instead of holding a worker slot.
const PHONE_NUMBER_ID = '106540352242922'
const platform = await startFakeChatPlatform()
t.teardown(platform.close)
const context = await createWorkerTestContext(t, fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID }))
const { db } = context.database
const processor = chatBroadcastsProcessor(context)

const [owner] = await db.execute<{ id: string }>(sql`insert into users (id, email, password_hash, role) values ('owner', 'owner@example.com', 'x', 'admin') returning id`)

/** A broadcast of hello_world to one recipient, `status` from `sendAt`, the recipient not tried before `notBefore`; and its job. */
async function queuedBroadcast ({ status, sendAt = new Date(), notBefore = null }: { status: 'scheduled' | 'sending', sendAt?: Date, notBefore?: Date | null }): Promise<string> {
  const [broadcast] = await db.execute<{ id: string }>(sql`
    insert into chat_broadcasts (id, user_id, account_id, phone_number_id, template_name, lang, rate_per_second, status, total, send_at)
    values (gen_random_uuid()::text, ${owner!.id}, 'default', ${PHONE_NUMBER_ID}, 'hello_world', 'en_US', 10, ${status}, 1, ${sendAt.toISOString()}::timestamptz)
    returning id`)
  await db.execute(sql`
    insert into chat_broadcast_recipients (broadcast_id, position, phone, not_before)
    values (${broadcast!.id}, 0, '15557660000', ${notBefore?.toISOString() ?? null}::timestamptz)`)
  await context.queues['chat-broadcasts'].add('broadcast', { broadcastId: broadcast!.id }, { jobId: broadcast!.id })
  return broadcast!.id
}
const statusOf = async (id: string) => (await db.execute<{ broadcast: string, recipient: string }>(sql`
  select b.status as broadcast, r.status as recipient from chat_broadcasts b join chat_broadcast_recipients r on r.broadcast_id = b.id where b.id = ${id}`))[0]

t.test('a broadcast due now sends to its recipient and ends: done, sent, its job completes', async (t) => {
  const id = await queuedBroadcast({ status: 'scheduled' })
  const job = await takeJob(t, context, 'chat-broadcasts')
  t.equal(await processor(job, TOKEN), undefined)
  t.same(await statusOf(id), { broadcast: 'done', recipient: 'sent' })
  t.match(platform.sends().map((send) => send.body), [{ to: '15557660000', type: 'template', template: { name: 'hello_world' } }])
})

t.test('a broadcast before its sendAt: its job is moved to delayed, nothing sent', async (t) => {
  const sendsBefore = platform.sends().length
  const id = await queuedBroadcast({ status: 'scheduled', sendAt: new Date(Date.now() + 60_000) })
  const job = await takeJob(t, context, 'chat-broadcasts')
  await t.rejects(processor(job, TOKEN), DelayedError)
  t.equal(await job.getState(), 'delayed')
  t.same(await statusOf(id), { broadcast: 'scheduled', recipient: 'queued' })
  t.equal(platform.sends().length, sendsBefore)
})

t.test('a broadcast whose recipients are backing off re-delays itself until they are due', async (t) => {
  const sendsBefore = platform.sends().length
  const id = await queuedBroadcast({ status: 'sending', notBefore: new Date(Date.now() + 60_000) })
  const job = await takeJob(t, context, 'chat-broadcasts')
  await t.rejects(processor(job, TOKEN), DelayedError)
  t.equal(await job.getState(), 'delayed')
  t.same(await statusOf(id), { broadcast: 'sending', recipient: 'queued' })
  t.equal(platform.sends().length, sendsBefore)
})
