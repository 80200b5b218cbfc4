import t from 'tap'
import { buildChatTestApp } from './chat-helper.ts'

/**
 * Labels (README, The team inbox: labels): one added to and removed from a conversation and a contact, people
 * labelling at once keeping each other's, the bounds, and each number's labels with their counts.
 */

const chat = await buildChatTestApp(t)
const { request } = chat

interface Labelled { id: string, phone: string, labels: string[] }

let customers = 0
const newCustomer = (): string => `1555400${String(++customers).padStart(4, '0')}`

/** A user with a number of their own: their labels are theirs alone. */
async function labeller (phoneNumberId: string) {
  const user = await chat.newMember()
  await chat.linkAccount(user.token, phoneNumberId)
  const call = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    request({ method, url, token: user.token, ...(payload !== undefined && { payload }) })
  /** A conversation, made by a template sent to a new customer. */
  const conversation = async (): Promise<Labelled> => {
    const phone = newCustomer()
    const sent = await call('POST', '/api/chat/send/template', { to: phone, templateName: 'hello_world' })
    if (sent.statusCode !== 200) throw new Error(sent.body)
    const list = await call('GET', '/api/chat/conversations?limit=500')
    return (list.json() as Labelled[]).find((c) => c.phone === phone)!
  }
  /** Contacts, made by an import. */
  const contacts = async (csv: string): Promise<Labelled[]> => {
    const imported = await request({ method: 'POST', url: '/api/chat/contacts/import', token: user.token, headers: { 'content-type': 'text/csv' }, payload: csv })
    if (imported.statusCode !== 200) throw new Error(imported.body)
    return (await call('GET', '/api/chat/contacts?limit=500')).json()
  }
  return { user, call, conversation, contacts }
}

const team = await labeller('200000000000401')

for (const kind of ['conversations', 'contacts'] as const) {
  /** A new conversation, or a new contact (the last by phone: customers' numbers grow). */
  const target = async (): Promise<Labelled> => kind === 'conversations' ? team.conversation() : (await team.contacts(`phone\n${newCustomer()}\n`)).at(-1)!
  /** The labels as stored, read through the list. */
  const storedLabels = async (id: string): Promise<string[]> =>
    ((await team.call('GET', `/api/chat/${kind}?limit=500`)).json() as Labelled[]).find((row) => row.id === id)!.labels
  const labelsOf = (res: { statusCode: number, body: string, json: () => Labelled }): string[] => {
    if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`)
    return res.json().labels
  }

  t.test(`${kind}: a label is added once, at the end, and removed; the labels stay a set`, async (t) => {
    const { id } = await target()
    const url = `/api/chat/${kind}/${id}/labels`
    t.same(labelsOf(await team.call('POST', url, { label: 'vip' })), ['vip'])
    t.same(labelsOf(await team.call('POST', url, { label: 'billing' })), ['vip', 'billing'])
    t.same(labelsOf(await team.call('POST', url, { label: 'vip' })), ['vip', 'billing'], 'a label it carries changes nothing')
    t.same(labelsOf(await team.call('POST', url, { label: 'needs/reply soon' })), ['vip', 'billing', 'needs/reply soon'])
    t.same(labelsOf(await team.call('DELETE', `${url}/${encodeURIComponent('needs/reply soon')}`)), ['vip', 'billing'], 'any label, URL-encoded')
    t.same(labelsOf(await team.call('DELETE', `${url}/vip`)), ['billing'])
    t.same(labelsOf(await team.call('DELETE', `${url}/vip`)), ['billing'], 'one it does not carry changes nothing')
    t.same(labelsOf(await team.call('DELETE', `${url}/Billing`)), ['billing'], 'labels are compared as written')
    const listed = (await team.call('GET', `/api/chat/${kind}?label=billing&limit=500`)).json() as Labelled[]
    t.same(listed.map((row) => row.id), [id], 'the list\'s label filter finds it')
  })

  t.test(`${kind}: people labelling at once keep each other's labels`, async (t) => {
    const { id } = await target()
    const labels = Array.from({ length: 20 }, (_, i) => `at-once-${i}`)
    const added = await Promise.all(labels.map(async (label) => team.call('POST', `/api/chat/${kind}/${id}/labels`, { label })))
    t.same(added.map((res) => res.statusCode), labels.map(() => 200))
    t.same((await storedLabels(id)).sort(), [...labels].sort(), 'all 20 kept')
    const removed = await Promise.all(labels.slice(0, 10).map(async (label) => team.call('DELETE', `/api/chat/${kind}/${id}/labels/${label}`)))
    t.same(removed.map((res) => res.statusCode), labels.slice(0, 10).map(() => 200))
    t.same((await storedLabels(id)).sort(), labels.slice(10).sort(), 'the other 10 kept')
  })

  t.test(`${kind}: bounds and bad input are a 400 naming the rule; another number's is a 404`, async (t) => {
    const { id } = await target()
    const url = `/api/chat/${kind}/${id}/labels`
    const cases: Array<[object, string]> = [
      [{}, 'label is required'],
      [{ label: '' }, 'label must be 1 to 50 characters'],
      [{ label: 'x'.repeat(51) }, 'label must be 1 to 50 characters'],
      [{ label: 7 }, 'label must be 1 to 50 characters']
    ]
    for (const [payload, message] of cases) {
      const res = await team.call('POST', url, payload)
      t.equal(res.statusCode, 400, JSON.stringify(payload))
      t.equal(res.json().message, message)
    }
    const long = await team.call('DELETE', `${url}/${'x'.repeat(51)}`)
    t.equal(long.statusCode, 400)
    t.equal(long.json().message, 'label must be 1 to 50 characters')
    for (const res of [await team.call('POST', url, { label: 'a\u0000b' }), await team.call('DELETE', `${url}/a%00b`)]) {
      t.equal(res.statusCode, 400)
      t.equal(res.json().code, 'INVALID_TEXT')
    }

    const fifty = Array.from({ length: 50 }, (_, i) => `l${i}`)
    t.equal((await team.call('PATCH', `/api/chat/${kind}/${id}`, { labels: fifty })).statusCode, 200)
    const full = await team.call('POST', url, { label: 'one-more' })
    t.equal(full.statusCode, 400)
    t.equal(full.json().message, `labels: the ${kind === 'conversations' ? 'conversation' : 'contact'} carries 50 labels, at most 50: remove one first`)
    t.same(labelsOf(await team.call('POST', url, { label: 'l7' })), fifty, 'one it carries is still no change')
    t.same(labelsOf(await team.call('DELETE', `${url}/l7`)).length, 49)
    t.same(labelsOf(await team.call('POST', url, { label: 'one-more' })).at(-1), 'one-more', 'with a place free, it is added')

    const outsider = await labeller('200000000000402')
    const notFound = kind === 'conversations' ? 'Conversation not found' : 'Contact not found'
    for (const res of [
      await outsider.call('POST', url, { label: 'mine' }),
      await outsider.call('DELETE', `${url}/l1`),
      await team.call('POST', `/api/chat/${kind}/no-such-id/labels`, { label: 'x' })
    ]) {
      t.equal(res.statusCode, 404)
      t.equal(res.json().message, notFound)
    }
  })
}

t.test('GET /api/chat/labels: each label of the number with its conversations and contacts, by name, paged', async (t) => {
  const shop = await labeller('200000000000403')
  const [first, second, archived] = [await shop.conversation(), await shop.conversation(), await shop.conversation()]
  const label = async (kind: string, id: string, name: string) => {
    const res = await shop.call('POST', `/api/chat/${kind}/${id}/labels`, { label: name })
    if (res.statusCode !== 200) throw new Error(res.body)
  }
  await label('conversations', first.id, 'vip')
  await label('conversations', first.id, 'billing')
  await label('conversations', second.id, 'vip')
  await label('conversations', archived.id, 'vip')
  t.equal((await shop.call('PATCH', `/api/chat/conversations/${archived.id}`, { isArchived: true })).statusCode, 200)
  const [x, y] = await shop.contacts(`phone,labels\n${newCustomer()},vip;wholesale\n${newCustomer()},\n`)
  t.same(x!.labels, ['vip', 'wholesale'])
  t.same(y!.labels, [])

  const labels = async (query = '') => {
    const res = await shop.call('GET', `/api/chat/labels${query}`)
    t.equal(res.statusCode, 200, res.body)
    return res.json()
  }
  t.same(await labels(), [
    { name: 'billing', conversations: 1, contacts: 0 },
    { name: 'vip', conversations: 3, contacts: 1 },
    { name: 'wholesale', conversations: 0, contacts: 1 }
  ], 'archived conversations count')
  t.same(await labels('?limit=1&offset=1'), [{ name: 'vip', conversations: 3, contacts: 1 }])

  await shop.call('DELETE', `/api/chat/conversations/${first.id}/labels/billing`)
  await shop.call('DELETE', `/api/chat/contacts/${x!.id}/labels/vip`)
  t.same(await labels(), [
    { name: 'vip', conversations: 3, contacts: 0 },
    { name: 'wholesale', conversations: 0, contacts: 1 }
  ], 'a label nothing carries is no label')

  const others = await team.call('GET', '/api/chat/labels?limit=500')
  t.equal(others.statusCode, 200)
  t.notOk((others.json() as Array<{ name: string }>).some((row) => row.name === 'wholesale'), 'another number\'s labels are not listed')
  t.ok((others.json() as Array<{ name: string }>).some((row) => row.name === 'billing'), 'its own are')

  const bad = await shop.call('GET', '/api/chat/labels?limit=0')
  t.equal(bad.statusCode, 400)
})
