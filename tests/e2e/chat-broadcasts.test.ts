import t from 'tap'
import { deliver, fakeChatEnv, startFakeChatPlatform, statusesDelivery } from '@switchboard/testing/fake-chat-platform'
import { createDatabase } from '@switchboard/core/db'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/** Broadcasts end to end (README, Broadcasts): the rate held at the platform, statuses, pause, resume, cancel, the platform's rate limit. */

const PHONE_NUMBER_ID = '106540352242922'
const APP_SECRET = 'e2e-broadcasts-secret'

/** When each template send reached the platform, by recipient: the platform's view of the rate. */
const arrivals: Array<{ to: string, at: number }> = []
const platform = await startFakeChatPlatform({
  onRequest: (request) => {
    const body = request.body as { type?: string, to?: string } | undefined
    if (request.method === 'POST' && body?.type === 'template' && typeof body.to === 'string') arrivals.push({ to: body.to, at: Date.now() })
  }
})
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, {
  env: {
    ...fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID, appSecret: APP_SECRET })
  }
})
const token = await stack.adminToken()

interface Broadcast { id: string, status: string, total: number, repeated: number, counts: Record<string, number> }
interface Recipient { position: number, phone: string, status: string, attempts: number, wamid: string | null, error: { code: number | null, title: string } | null }

let batch = 0
/** `count` recipients of a batch of their own: numbers no other test uses. */
const audience = (count: number): Array<{ to: string }> => {
  batch++
  return Array.from({ length: count }, (_, n) => ({ to: `1556${String(batch).padStart(2, '0')}${String(n).padStart(5, '0')}` }))
}

async function create (body: Record<string, unknown>): Promise<Broadcast> {
  const res = await stack.call('POST', '/api/chat/broadcasts', { token, body: { templateName: 'hello_world', ...body } })
  if (res.status !== 201) throw new Error(`broadcast refused: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}
const get = async (id: string): Promise<Broadcast> => (await stack.call('GET', `/api/chat/broadcasts/${id}`, { token })).body
const recipientsOf = async (id: string, query = ''): Promise<Recipient[]> => (await stack.call('GET', `/api/chat/broadcasts/${id}/recipients?limit=500${query}`, { token })).body
const ended = async (id: string, timeoutMs = 30_000): Promise<Broadcast> =>
  waitFor(async () => { const b = await get(id); return ['done', 'cancelled'].includes(b.status) ? b : undefined }, { what: `broadcast ${id} to end`, timeoutMs })

/** When the sends to `phones` reached the platform, in order. */
const arrivalTimes = (phones: ReadonlySet<string>): number[] =>
  arrivals.filter((arrival) => phones.has(arrival.to)).map((arrival) => arrival.at).sort((a, b) => a - b)

/**
 * The most sends that reached the platform within any window of `windowMs`, among `phones`.
 * The fake platform stamps an arrival when this test's own event loop gets to it, so on a loaded
 * machine sends admitted 1.2 s apart (README, Broadcasts) may be stamped closer than a second.
 */
function busiestWindow (phones: ReadonlySet<string>, windowMs = 1000): number {
  const times = arrivalTimes(phones)
  let most = 0
  for (let start = 0, end = 0; end < times.length; end++) {
    while (times[end]! - times[start]! >= windowMs) start++
    most = Math.max(most, end - start + 1)
  }
  return most
}

t.test('a broadcast sends every recipient once, never above its rate in any second, and counts their statuses', async (t) => {
  const recipients = audience(60)
  const created = await create({ recipients: [...recipients, recipients[0]!], ratePerSecond: 20 })
  t.match(created, { status: /scheduled|sending/, total: 60, counts: { queued: 60 } }, 'a number listed twice is sent once')
  const done = await ended(created.id)
  t.match(done, { status: 'done', repeated: 0, counts: { sent: 60, queued: 0, failed: 0, skipped: 0 } })
  const phones = new Set(recipients.map((r) => r.to))
  t.equal(arrivals.filter((arrival) => phones.has(arrival.to)).length, 60, 'each recipient sent once')
  // Admitted at most 20 in any 1.2 s: whatever the stamps' delay, the 41st send came at least 2.4 s
  // after the first, and no more than 20 arrive within 0.6 s of one another.
  const times = arrivalTimes(phones)
  t.ok(times[40]! - times[0]! >= 2000, `the 41st send reached the platform ${times[40]! - times[0]!} ms after the first (at least 2 s)`)
  const busiest = busiestWindow(phones, 600)
  t.ok(busiest <= 20, `at most 20 sends reached the platform within 0.6 s (${busiest})`)

  const list = await recipientsOf(created.id)
  t.equal(list.length, 60)
  t.ok(list.every((r) => r.status === 'sent' && /^wamid\./.test(r.wamid ?? '')))
  await deliver(`${stack.baseUrl}/webhook/chat`, statusesDelivery(PHONE_NUMBER_ID, [
    { wamid: list[0]!.wamid!, status: 'delivered', recipientId: list[0]!.phone },
    { wamid: list[1]!.wamid!, status: 'read', recipientId: list[1]!.phone },
    { wamid: list[2]!.wamid!, status: 'failed', recipientId: list[2]!.phone, errors: [{ code: 131026, title: 'Message undeliverable' }] }
  ]), APP_SECRET)
  const counted = await waitFor(async () => { const b = await get(created.id); return b.counts.failed === 1 ? b : undefined }, { what: 'the statuses counted' })
  t.same(counted.counts, { queued: 0, sent: 57, delivered: 1, read: 1, failed: 1, skipped: 0 }, 'counts follow each message\'s status')
  const failed = await recipientsOf(created.id, '&status=failed')
  t.match(failed, [{ position: 2, status: 'failed', error: { code: 131026, title: 'Message undeliverable' } }])
})

t.test('pause stops the sends, resume finishes them, cancel skips the rest', async (t) => {
  const paused = await create({ recipients: audience(40), ratePerSecond: 10 })
  await waitFor(async () => (await get(paused.id)).counts.sent >= 5 ? true : undefined, { what: 'some sends' })
  const pause = await stack.call('POST', `/api/chat/broadcasts/${paused.id}/pause`, { token })
  t.equal(pause.status, 200)
  t.equal(pause.body.status, 'paused')
  await new Promise((resolve) => setTimeout(resolve, 600))
  const held = (await get(paused.id)).counts.sent
  await new Promise((resolve) => setTimeout(resolve, 1500))
  t.equal((await get(paused.id)).counts.sent, held, 'nothing is sent while paused')
  t.ok(held < 40)
  const again = await stack.call('POST', `/api/chat/broadcasts/${paused.id}/pause`, { token })
  t.equal(again.status, 409)
  t.match(again.body.message, 'Broadcast is paused: it cannot be paused')
  t.equal((await stack.call('POST', `/api/chat/broadcasts/${paused.id}/resume`, { token })).status, 200)
  t.match(await ended(paused.id), { status: 'done', counts: { sent: 40 } })

  const cancelled = await create({ recipients: audience(30), ratePerSecond: 5 })
  await waitFor(async () => (await get(cancelled.id)).counts.sent >= 2 ? true : undefined, { what: 'some sends' })
  const cancel = await stack.call('POST', `/api/chat/broadcasts/${cancelled.id}/cancel`, { token })
  t.equal(cancel.status, 200)
  await ended(cancelled.id)
  // Sends waiting for the rate when the cancel came are skipped by their senders.
  const after = await waitFor(async () => { const b = await get(cancelled.id); return b.counts.queued === 0 ? b : undefined }, { what: 'no recipient left queued' })
  t.equal(after.status, 'cancelled')
  t.equal(after.counts.sent + after.counts.skipped, 30, 'every recipient sent or skipped')
  t.ok(after.counts.skipped > 0)
  t.match((await recipientsOf(cancelled.id, '&status=skipped'))[0], { error: { title: 'Cancelled' } })
  t.equal((await stack.call('POST', `/api/chat/broadcasts/${cancelled.id}/resume`, { token })).status, 409)
})

t.test('the platform\'s throughput limit (130429) is backed off: every recipient is sent, once', async (t) => {
  platform.options.messagesPerSecond = 5
  t.teardown(() => { platform.options.messagesPerSecond = undefined })
  const recipients = audience(20)
  const created = await create({ recipients, ratePerSecond: 20 })
  const done = await ended(created.id, 60_000)
  t.match(done, { status: 'done', counts: { sent: 20, failed: 0 } })
  const list = await recipientsOf(created.id)
  t.ok(list.some((r) => r.attempts > 1), 'some sends were refused with 130429 and tried again')
  t.equal(new Set(list.map((r) => r.wamid)).size, 20, 'one accepted send per recipient')
})

t.test('the pair limit (131056) is backed off: a customer messaged a moment ago gets the broadcast a little later, once', async (t) => {
  platform.options.pairIntervalMs = 3000
  t.teardown(() => { platform.options.pairIntervalMs = undefined })
  const [recent, ...others] = audience(3)
  const direct = await stack.call('POST', '/api/chat/send/template', { token, body: { to: recent!.to, templateName: 'hello_world' } })
  t.equal(direct.status, 200)
  const created = await create({ recipients: [recent!, ...others] })
  const done = await ended(created.id, 30_000)
  t.match(done, { status: 'done', counts: { sent: 3, failed: 0 } })
  const [first] = await recipientsOf(created.id)
  t.match(first, { phone: recent!.to, status: 'sent', attempts: 2 }, 'refused with 131056, tried again after its wait')
  t.equal(arrivals.filter((arrival) => arrival.to === recent!.to).length, 3, 'the direct send, the refused one and the broadcast\'s')
})

t.test('a scheduled broadcast waits for its sendAt; refusals are per recipient; bounds are 400s', async (t) => {
  const later = await create({ recipients: audience(3), sendAt: new Date(Date.now() + 1500).toISOString() })
  t.equal(later.status, 'scheduled')
  await new Promise((resolve) => setTimeout(resolve, 700))
  t.equal((await get(later.id)).counts.sent, 0, 'nothing before sendAt')
  t.match(await ended(later.id), { status: 'done', counts: { sent: 3 } })

  const [optedOut, ...others] = audience(3)
  const imported = await fetch(`${stack.baseUrl}/api/chat/contacts/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' },
    body: `phone,optedOut\n${optedOut!.to},true\n`
  })
  t.equal(imported.status, 200)
  const consent = await create({ recipients: [optedOut!, ...others] })
  t.match(await ended(consent.id), { counts: { sent: 2, skipped: 1 } })
  t.match((await recipientsOf(consent.id, '&status=skipped'))[0], { phone: optedOut!.to, error: { title: 'Opted out' } }, 'an opted-out contact is skipped')
  t.notOk(arrivals.some((arrival) => arrival.to === optedOut!.to), 'nothing reached the opted-out contact')

  const missing = await create({ templateName: 'no_such_template', recipients: audience(2) })
  const failed = await ended(missing.id)
  t.match(failed.counts, { failed: 2, sent: 0 })
  t.match((await recipientsOf(missing.id))[0], { status: 'failed', error: { code: 132001 } })

  const tooMany = await stack.call('POST', '/api/chat/broadcasts', { token, body: { templateName: 'hello_world', recipients: audience(10_001) } })
  t.equal(tooMany.status, 400)
  t.match(tooMany.body.message, 'recipients must hold 1 to 10000 recipients')
  const badPhone = await stack.call('POST', '/api/chat/broadcasts', { token, body: { templateName: 'hello_world', recipients: [{ to: '15550001111' }, { to: 'call me' }] } })
  t.equal(badPhone.status, 400)
  t.match(badPhone.body.message, 'recipients[1].to must be a phone number in international format')
  const badRate = await stack.call('POST', '/api/chat/broadcasts', { token, body: { templateName: 'hello_world', recipients: audience(1), ratePerSecond: 0 } })
  t.equal(badRate.status, 400)
  const member = await stack.client.newUser(token)
  t.equal((await stack.call('GET', `/api/chat/broadcasts/${later.id}`, { token: member.token })).status, 404, 'another user\'s broadcast is not found')
})

t.test('audiences from contacts: by id, and a label of 100,000 contacts accepted, sent at its rate and pausable', async (t) => {
  const importCsv = async (csv: string): Promise<Response> => fetch(`${stack.baseUrl}/api/chat/contacts/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' },
    body: csv
  })
  const vip = audience(3)
  t.equal((await importCsv(`phone,labels\n${vip.map((r) => `${r.to},vip`).join('\n')}\n`)).status, 200)
  const { body: contacts } = await stack.call('GET', '/api/chat/contacts?label=vip', { token })
  const byIds = await create({ contactIds: contacts.map((c: { id: string }) => c.id).slice(0, 2) })
  t.match(await ended(byIds.id), { total: 2, counts: { sent: 2 } })
  const stranger = await stack.call('POST', '/api/chat/broadcasts', { token, body: { templateName: 'hello_world', contactIds: [contacts[0].id, 'no-such-contact'] } })
  t.equal(stranger.status, 400)
  t.match(stranger.body.message, 'contactIds: 1 of them are not contacts of this account')
  const both = await stack.call('POST', '/api/chat/broadcasts', { token, body: { templateName: 'hello_world', label: 'vip', recipients: vip } })
  t.equal(both.status, 400)
  t.match(both.body.message, 'Give exactly one of recipients, label and contactIds')

  // 100,000 contacts seeded in one statement: the import is not what this measures.
  const seed = createDatabase(stack.env.DATABASE_URL!, { max: 1 })
  t.teardown(async () => { await seed.close() })
  await seed.sql`
    insert into chat_contacts (id, phone_number_id, phone, labels)
    select 'seed' || n, ${PHONE_NUMBER_ID}, '1557' || lpad(n::text, 7, '0'), array['all']
    from generate_series(0, 99999) as n`
  const phones = new Set(Array.from({ length: 100_000 }, (_, n) => `1557${String(n).padStart(7, '0')}`))
  const accepted = Date.now()
  const huge = await create({ label: 'all', ratePerSecond: 50 })
  t.equal(huge.total, 100_000, `accepted with every contact of the label in ${Date.now() - accepted} ms`)
  await waitFor(async () => (await get(huge.id)).counts.sent >= 50 ? true : undefined, { what: 'the first sends', timeoutMs: 20_000 })
  t.equal((await stack.call('POST', `/api/chat/broadcasts/${huge.id}/pause`, { token })).status, 200)
  await new Promise((resolve) => setTimeout(resolve, 1500))
  const held = (await get(huge.id)).counts
  t.ok(busiestWindow(phones) <= 50, `never above 50 a second (${busiestWindow(phones)})`)
  await new Promise((resolve) => setTimeout(resolve, 1000))
  t.equal((await get(huge.id)).counts.sent, held.sent, 'paused: nothing more is sent')
  const cancelled = await stack.call('POST', `/api/chat/broadcasts/${huge.id}/cancel`, { token })
  t.equal(cancelled.status, 200)
  t.equal(cancelled.body.counts.sent + cancelled.body.counts.skipped, 100_000, 'cancelled: the rest skipped')
})
