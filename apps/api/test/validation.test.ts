import t from 'tap'
import { buildTestApp } from './helper.ts'

const { request, adminToken: token } = await buildTestApp(t)

t.test('JSON bodies keep their types: wrong types are refused, not coerced', async (t) => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ name: 5, triggerType: 'MANUAL' }, 'name must be string'],
    [{ name: 'x', triggerType: 'MANUAL', tags: 'urgent' }, 'tags must be array'],
    [{ name: 'x', triggerType: 'MANUAL', isActive: 'true' }, 'isActive must be boolean']
  ]
  for (const [payload, message] of cases) {
    const res = await request({ method: 'POST', url: '/api/automation/workflows', token, payload })
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.equal(res.json().message, message)
  }
  const list = await request({ method: 'GET', url: '/api/automation/workflows', token })
  t.same(list.json(), [], 'nothing was stored')
})

t.test('query strings are coerced to their schema types', async (t) => {
  const created = await request({ method: 'POST', url: '/api/automation/workflows', token, payload: { name: 'on', triggerType: 'MANUAL', isActive: true } })
  t.equal(created.statusCode, 201)
  const active = await request({ method: 'GET', url: '/api/automation/workflows?isActive=true&limit=10', token })
  t.equal(active.statusCode, 200)
  t.same(active.json().map((w: { name: string }) => w.name), ['on'])
  const inactive = await request({ method: 'GET', url: '/api/automation/workflows?isActive=false', token })
  t.same(inactive.json(), [])
})

t.test('malformed JSON is a 400 in the API\'s error shape', async (t) => {
  const res = await request({ method: 'POST', url: '/api/automation/workflows', token, payload: '{"name":', headers: { 'content-type': 'application/json' } })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { statusCode: 400, code: 'BAD_REQUEST', message: /not valid JSON/ })
})

t.test('NUL characters, which Postgres cannot store, are a 400 wherever they arrive', async (t) => {
  const nulText = { statusCode: 400, code: 'INVALID_TEXT', error: 'Text must not contain NUL (\\u0000) characters', message: 'Text must not contain NUL (\\u0000) characters' }
  const cases = [
    { method: 'POST', url: '/api/auth/login', payload: { email: 'a\u0000b@example.com', password: 'x' } },
    { method: 'DELETE', url: '/api/users/a%00b', token },
    { method: 'GET', url: '/api/chat/conversations', token, headers: { 'x-account-id': 'a\u0000b' } },
    { method: 'PATCH', url: '/api/chat/accounts/x', token, payload: { name: 'a\u0000b' } }
  ]
  for (const options of cases) {
    const res = await request(options as Parameters<typeof request>[0])
    t.equal(res.statusCode, 400, `${options.method} ${options.url}`)
    t.same(res.json(), nulText)
  }
})
