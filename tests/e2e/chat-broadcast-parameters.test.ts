import t from 'tap'
import { fakeChatEnv, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

/**
 * A broadcast's parameters rendered per recipient from its contact (README, Broadcasts: parameters per
 * recipient), end to end: api and worker processes, the fake chat platform. A contact lacking a value
 * fails that recipient naming the field; the others are sent.
 */

const PHONE_NUMBER_ID = '106540352242922'
const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, { env: fakeChatEnv(platform, { phoneNumberId: PHONE_NUMBER_ID }) })
const token = await stack.adminToken()

interface Broadcast { id: string, status: string, total: number, counts: Record<string, number> }
interface Recipient { position: number, phone: string, status: string, wamid: string | null, error: { code: number | null, title: string, details: string | null } | null }
interface TemplateSend { to: string, template: { name: string, components?: Array<{ type: string, parameters: Array<{ type: string, text: string }> }> } }

/** The body variables each phone was sent, as the platform received them. */
const bodiesSentTo = (phones: ReadonlySet<string>): Map<string, string[]> => new Map(platform.sends()
  .map((send) => send.body as TemplateSend)
  .filter((body) => phones.has(body.to))
  .map((body) => [body.to, body.template.components?.find((c) => c.type === 'body')?.parameters.map((p) => p.text) ?? []]))

async function importContacts (csv: string): Promise<void> {
  const res = await fetch(`${stack.baseUrl}/api/chat/contacts/import`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' }, body: csv })
  if (res.status !== 200) throw new Error(`import refused: ${res.status} ${await res.text()}`)
}

async function create (body: Record<string, unknown>): Promise<Broadcast> {
  const res = await stack.call('POST', '/api/chat/broadcasts', { token, body: { templateName: 'order_update', ratePerSecond: 1000, ...body } })
  if (res.status !== 201) throw new Error(`broadcast refused: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}
const done = async (id: string): Promise<Broadcast> => waitFor(async () => {
  const broadcast: Broadcast = (await stack.call('GET', `/api/chat/broadcasts/${id}`, { token })).body
  return broadcast.status === 'done' ? broadcast : undefined
}, { what: `broadcast ${id} to be done`, timeoutMs: 60_000 })
const recipientsOf = async (id: string, query = ''): Promise<Recipient[]> => (await stack.call('GET', `/api/chat/broadcasts/${id}/recipients?limit=500${query}`, { token })).body

const body = (...texts: string[]) => [{ type: 'body', parameters: texts.map((text) => ({ type: 'text', text })) }]

t.test('a broadcast to a label: each contact gets its own name and attribute; listed recipients resolve against their phone\'s contact', async (t) => {
  const long = 'x'.repeat(1000)
  await importContacts(`phone,name,labels,attr.plan,attr.long\n15571000001,Ana,vip,gold,\n15571000002,Bo,vip,silver,\n15571000003,Cy,other,gold,\n15571000004,Dee,other,,${long}\n15571000005,Eve,other,,${long}\n`)
  const byLabel = await create({ label: 'vip', components: body('{{contact.name}}', '{{contact.attributes.plan | upper}}') })
  t.match(await done(byLabel.id), { total: 2, counts: { sent: 2, failed: 0 } })
  t.same(bodiesSentTo(new Set(['15571000001', '15571000002', '15571000003'])), new Map([
    ['15571000001', ['Ana', 'GOLD']],
    ['15571000002', ['Bo', 'SILVER']]
  ]), 'each with its own values; the contact without the label gets nothing')

  const listed = await create({
    recipients: [
      { to: '+1 557 100 0003', components: body('{{contact.name}}', 'A-{{contact.phone}}') },
      { to: '15571000009', components: body('Friend', '{{contact.phone}}') },
      { to: '15571000008', components: body('{{contact.name}}', 'A-1') },
      { to: '15571000004', components: body('{{contact.attributes.long}}{{contact.attributes.long}}', 'A-1') },
      { to: '15571000005', components: body(...Array.from({ length: 40 }, () => '{{contact.attributes.long}}')) }
    ]
  })
  t.match(await done(listed.id), { total: 5, counts: { sent: 2, failed: 3 } })
  t.same(bodiesSentTo(new Set(['15571000003', '15571000009', '15571000008'])), new Map([
    ['15571000003', ['Cy', 'A-15571000003']],
    ['15571000009', ['Friend', '15571000009']]
  ]), 'a phone without a contact has its phone, and nothing else')
  t.same((await recipientsOf(listed.id, '&status=failed')).map((r) => [r.phone, r.error?.title]), [
    ['15571000008', 'components[0].parameters[0]: contact.name has no value'],
    ['15571000004', 'components[0].parameters[0].text must be at most 1024 characters'],
    ['15571000005', 'components, rendered for this contact: Rendered config exceeds 32768 bytes']
  ], 'a value missing, a value past its bound once rendered, and components past the bound of what is rendered')
})

t.test('placeholders that read anything but the contact, and shapes the platform refuses, are a 400 when the broadcast is made', async (t) => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ label: 'vip', components: body('{{triggerData.name}}', 'x') }, 'components[0].parameters[0].text: {{triggerData.name}} is not a contact field: a broadcast fills contact.name, contact.phone and contact.attributes.<name>'],
    [{ label: 'vip', components: body('{{contact.attributes}}', 'x') }, 'components[0].parameters[0].text: {{contact.attributes}} is not a contact field'],
    [{ label: 'vip', components: body('{{contact.name | shout}}', 'x') }, 'components[0].parameters[0].text: Unknown template filter: shout'],
    [{ recipients: [{ to: '15571000001' }, { to: '15571000002', components: [{ type: 'buttons', sub_type: 'url', index: 0, parameters: [{ type: 'text', text: '' }] }] }] }, 'recipients[1].components[0].parameters[0].text needs a value']
  ]
  for (const [audience, message] of cases) {
    const res = await stack.call('POST', '/api/chat/broadcasts', { token, body: { templateName: 'order_update', ...audience } })
    t.equal(res.status, 400, message)
    t.match(res.body, { code: 'VALIDATION_ERROR', message }, message)
  }
})

t.test('hostile: 1,000 recipients with per-contact parameters, 10 lacking a value: 10 fail naming the field, 990 are sent', async (t) => {
  const phones = Array.from({ length: 1000 }, (_, n) => `1557200${String(n).padStart(4, '0')}`)
  const lacking = new Set(phones.filter((_, n) => n % 100 === 37))
  const rows = phones.map((phone, n) => `${phone},Customer ${n},spring,${lacking.has(phone) ? '' : `plan-${n}`}`)
  await importContacts(`phone,name,labels,attr.plan\n${rows.join('\n')}\n`)
  const created = await create({ label: 'spring', components: body('{{contact.name}}', '{{contact.attributes.plan}}') })
  t.equal(created.total, 1000)
  const finished = await done(created.id)
  t.match(finished.counts, { sent: 990, failed: 10, queued: 0, skipped: 0 })

  const failed = await recipientsOf(created.id, '&status=failed')
  t.same(new Set(failed.map((r) => r.phone)), lacking, 'the 10 without a plan failed')
  t.ok(failed.every((r) => r.wamid === null && r.error?.title === 'components[0].parameters[1]: contact.attributes.plan has no value' && r.error.code === null),
    'each names the parameter and the field that had no value')
  const sent = bodiesSentTo(new Set(phones))
  t.equal(sent.size, 990, 'the platform received 990 sends')
  t.ok([...lacking].every((phone) => !sent.has(phone)), 'none of the 10 reached the platform')
  t.ok(phones.every((phone, n) => lacking.has(phone) || (sent.get(phone)?.[0] === `Customer ${n}` && sent.get(phone)?.[1] === `plan-${n}`)), 'each of the 990 with its own name and plan')
})
