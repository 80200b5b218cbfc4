import t from 'tap'
import { buildChatTestApp, DEFAULT_PHONE_NUMBER_ID } from './chat-helper.ts'
import { planOf } from './query-plan.ts'

const testApp = await buildChatTestApp(t)
const { app, request, adminToken } = testApp
const { sql } = app.database

/** Unread conversations with 25 messages each on the default account's number. */
async function seedConversations (prefix: string, count: number): Promise<void> {
  await sql`
    insert into conversations (id, phone_number_id, phone, last_message, last_message_at, unread_count)
    select ${prefix} || g, ${DEFAULT_PHONE_NUMBER_ID}, '1555' || lpad(g::text, 7, '0') || ${prefix}, 'hi', now() - g * interval '1 minute', g
    from generate_series(1, ${count}) g`
  await sql`
    insert into messages (id, conversation_id, direction, content, created_at)
    select c.id || '-' || m, c.id, 'inbound', 'message ' || m, now() - interval '1 hour' + m * interval '1 second'
    from conversations c cross join generate_series(1, 25) m
    where c.id like ${prefix + '%'}`
}

/** The auth hook's lookup of the token's user, cached for a few seconds: present or not depending on timing. */
const isRoleLookup = (query: string): boolean => query.startsWith('select "role", "token_version", "email" from "users"')

/** The SQL statements the route runs while answering one request, counted through the pool's debug hook. */
async function statementsFor (url: string): Promise<{ statements: string[], body: Array<{ messages: unknown[] }> }> {
  const statements: string[] = []
  sql.options.debug = (_connection, query) => { if (!isRoleLookup(query)) statements.push(query) }
  try {
    const res = await request({ method: 'GET', url, token: adminToken })
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
    return { statements, body: res.json() }
  } finally {
    sql.options.debug = false
  }
}

t.test('GET /api/chat/conversations runs as many statements for 40 conversations as for one', async (t) => {
  await seedConversations('one', 1)
  const few = await statementsFor('/api/chat/conversations?limit=500')
  t.equal(few.body.length, 1)
  t.equal(few.body[0].messages.length, 20, 'the latest 20 messages are embedded')

  await seedConversations('many', 39)
  const many = await statementsFor('/api/chat/conversations?limit=500')
  t.equal(many.body.length, 40)
  t.ok(many.body.every((conversation) => conversation.messages.length === 20), 'every conversation embeds its latest 20 messages')

  t.ok(few.statements.length > 0, 'the hook sees the statements')
  t.equal(many.statements.length, few.statements.length, `the same statements: ${many.statements.join(' | ')}`)

  for (const sort of ['unread', 'oldest']) {
    const sorted = await statementsFor(`/api/chat/conversations?limit=500&sort=${sort}&filter=unread`)
    t.equal(sorted.body.length, 40)
    t.equal(sorted.statements.length, few.statements.length, `sort ${sort} with a filter`)
  }
})

t.test('embedded latest messages and history pages are read in index order, not by sorting a conversation\'s messages', async (t) => {
  await seedConversations('plan', 2)
  const [conversation] = await sql<Array<{ id: string }>>`select id from conversations where id like 'plan%' order by id limit 1`
  for (const [what, url, statement] of [
    ['latest 20 per conversation', '/api/chat/conversations?limit=500', /lateral/i],
    ['history page', `/api/chat/conversations/${conversation!.id}/messages?limit=10`, /from "messages"/]
  ] as const) {
    const plan = await planOf(testApp, adminToken, url, statement)
    const messagesPart = plan.split('\n').filter((line) => /messages/.test(line)).join('\n')
    t.match(messagesPart, /Index Scan/, `${what} uses the messages index:\n${plan}`)
    t.notMatch(plan, /Sort Key: (messages\.)?created_at|Sort Key: m\.created_at/, `${what} sorts no messages:\n${plan}`)
  }
})

t.test('a person\'s own queue (assigned=me) is read from its index in the list\'s order, whatever the number holds besides', async (t) => {
  await seedConversations('mine', 30)
  const [admin] = await sql<Array<{ id: string }>>`select id from users where role = 'admin' limit 1`
  await sql`update conversations set assigned_agent_id = ${admin!.id} where id like 'mine%' and unread_count % 3 = 0`
  for (const query of ['assigned=me', 'assigned=me&sort=oldest', 'assigned=me&filter=unread', `assigned=${admin!.id}&label=vip`]) {
    const plan = await planOf(testApp, adminToken, `/api/chat/conversations?${query}`, /from "conversations"/)
    t.match(plan, /conversations_account_assigned_idx/, `${query} uses the assignment index:\n${plan}`)
    t.notMatch(plan, /Sort Key/, `${query} sorts nothing:\n${plan}`)
  }
})
