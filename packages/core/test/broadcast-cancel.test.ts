import { sql } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { waitFor } from '@switchboard/testing/wait'
import { broadcastSender } from '../src/chat/broadcast-sender.ts'
import { broadcastsService } from '../src/chat/broadcasts.ts'
import { ChatPlatformError } from '../src/chat/client.ts'
import { platformFailure } from '../src/chat/platform-errors.ts'
import type { ChatService } from '../src/chat/sending.ts'
import type { SendRate } from '../src/chat/send-rate.ts'
import { chatBroadcastRecipients, chatBroadcasts, users } from '../src/db/schema/index.ts'
import { createLogger } from '../src/logger.ts'

// A cancel that meets a send given back (a pause caught it waiting for the rate, or the platform
// said "not now") leaves no recipient queued: the send is skipped as "Cancelled" whichever commits
// first. The sender's waits are held open by hand so each interleaving is the one meant.
const { db, queues } = await createCoreTestContext(t)
const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x', role: 'admin' }).returning()
const viewer = { id: owner!.id, role: owner!.role }
const broadcasts = broadcastsService({ db, queues })

interface Gate { entered: Promise<void>, open: () => void, wait: () => Promise<void> }
/** A wait the test opens: `entered` resolves when the sender reaches it. */
function gate (): Gate {
  let entered!: () => void
  let open!: () => void
  const enteredPromise = new Promise<void>((resolve) => { entered = resolve })
  const opened = new Promise<void>((resolve) => { open = resolve })
  return { entered: enteredPromise, open, wait: async () => { entered(); await opened } }
}

function sender (admit: SendRate['admit'], sendTemplate: ChatService['sendTemplate']) {
  const chat = { accounts: { byId: async () => ({ id: 'default', phoneNumberId: '106540352242922' }) }, sendTemplate } as unknown as ChatService
  return broadcastSender({ db, chat, sendRate: { admit }, logger: createLogger('silent', 'broadcast-cancel-test') })
}

/** The platform's throughput limit, as the chat service throws it. */
const notNow = (): unknown => platformFailure(new ChatPlatformError(429, { code: 130429, message: '(#130429) Rate limit hit', type: 'OAuthException' }))

async function sendingBroadcast (): Promise<string> {
  const [broadcast] = await db.insert(chatBroadcasts).values({
    userId: owner!.id, accountId: 'default', phoneNumberId: '106540352242922', templateName: 'hello_world', lang: 'en_US', ratePerSecond: 1, status: 'sending', total: 1
  }).returning()
  await db.insert(chatBroadcastRecipients).values({ broadcastId: broadcast!.id, position: 0, phone: '15557660000' })
  return broadcast!.id
}

async function recipient (broadcastId: string) {
  const [row] = await db.select().from(chatBroadcastRecipients).where(sql`${chatBroadcastRecipients.broadcastId} = ${broadcastId}`)
  return row!
}

/** Statements of this database waiting for a row lock. */
async function lockWaiters (): Promise<number> {
  const [row] = await db.execute<{ n: number }>(sql`
    select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)
  return row!.n
}

t.test('a cancel between a lane reading "paused" and giving its recipient back: the recipient is skipped', async (t) => {
  const id = await sendingBroadcast()
  const admitted = gate()
  const run = sender(admitted.wait, async () => { throw new Error('nothing is sent') }).run(id)
  await admitted.entered
  t.equal((await recipient(id)).status, 'sending', 'claimed, waiting for the rate')
  await broadcasts.pause(viewer, id)

  // The recipient's row held by another transaction: the lane's give-back waits for it.
  const rowHeld = gate()
  const holder = db.transaction(async (tx) => {
    await tx.execute(sql`select 1 from chat_broadcast_recipients where broadcast_id = ${id} for update`)
    await rowHeld.wait()
  })
  await rowHeld.entered
  admitted.open()
  await waitFor(async () => await lockWaiters() === 1 ? true : undefined, { what: 'the give-back to wait for the row' })

  let cancelled = false
  const cancel = broadcasts.cancel(viewer, id).then((view) => { cancelled = true; return view })
  // The cancel either finishes now (nothing holds it) or waits behind the give-back's lock.
  await waitFor(async () => cancelled || await lockWaiters() === 2 ? true : undefined, { what: 'the cancel to finish or wait' })
  rowHeld.open()
  await holder
  t.equal((await cancel).status, 'cancelled')
  t.equal(await run, undefined, 'the job is done')

  t.match(await recipient(id), { status: 'skipped', error: { title: 'Cancelled' }, leaseUntil: null })
  t.equal((await broadcasts.get(viewer, id)).counts.queued, 0, 'no recipient left queued')
})

t.test('a send the platform answers "not now" after a cancel: skipped, not queued for a retry', async (t) => {
  const id = await sendingBroadcast()
  const sending = gate()
  const run = sender(async () => {}, async () => {
    await sending.wait()
    throw notNow()
  }).run(id)
  await sending.entered
  await broadcasts.cancel(viewer, id)
  t.equal((await recipient(id)).status, 'sending', 'the send in flight is left to finish')
  sending.open()
  t.equal(await run, undefined)

  t.match(await recipient(id), { status: 'skipped', error: { title: 'Cancelled' }, notBefore: null, attempts: 1 })
  t.equal((await broadcasts.get(viewer, id)).counts.queued, 0, 'no recipient left queued')
})

t.test('a send answered "not now" while sending: queued again with its error and a wait', async (t) => {
  const id = await sendingBroadcast()
  const run = sender(async () => {}, async () => {
    throw notNow()
  }).run(id)
  const next = await run
  t.ok(next !== undefined && next.delayMs >= 500, 'looked at again after the wait')
  const row = await recipient(id)
  t.match(row, { status: 'queued', attempts: 1, leaseUntil: null, error: { code: 130429 } })
  t.ok(row.notBefore !== null && row.notBefore.getTime() > Date.now(), 'not taken before its wait')
})
