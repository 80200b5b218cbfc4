import t from 'tap'
import { buildTestApp } from './helper.ts'

// HTTP_REQUEST_ALLOW_PRIVATE at its default, false: the setting http_request's guard reads.
const { request, newMember } = await buildTestApp(t)
const member = await newMember()
const create = async (url: string) => await request({ method: 'POST', url: '/api/automation/subscriptions', token: member.token, payload: { url, events: ['workflow.run.failed'] } })

t.test('a subscription URL at a private, loopback or metadata address is refused when it is created, and when it is changed to one', async (t) => {
  for (const [url, message] of [
    ['http://127.0.0.1:8080/hook', 'url refused: Blocked request to private address 127.0.0.1'],
    ['http://10.1.2.3/hook', 'url refused: Blocked request to private address 10.1.2.3'],
    ['http://[::1]/hook', 'url refused: Blocked request to private address ::1'],
    ['http://169.254.169.254/latest/meta-data/', 'url refused: Blocked request to cloud metadata address 169.254.169.254'],
    ['http://metadata.google.internal/computeMetadata/v1/', 'url refused: Blocked request to cloud metadata host metadata.google.internal'],
    ['http://user:pass@hooks.example.com/', 'url must not carry a user or password: deliveries are signed with the secret'],
    [`https://hooks.example.com/${'a'.repeat(2100)}`, 'url must be an http or https URL of at most 2048 characters']
  ]) {
    const res = await create(url!)
    t.equal(res.statusCode, 400, url)
    t.equal(res.json().message, message)
  }
  const created = await create('https://hooks.example.com/switchboard')
  t.equal(created.statusCode, 201, 'a public name is accepted (its addresses are checked at each delivery)')
  const changed = await request({ method: 'PATCH', url: `/api/automation/subscriptions/${created.json().id}`, token: member.token, payload: { url: 'http://192.168.0.10/' } })
  t.equal(changed.statusCode, 400)
})

t.test('bounds: events from the catalogue only, subscriptions per user', async (t) => {
  const res = await request({ method: 'POST', url: '/api/automation/subscriptions', token: member.token, payload: { url: 'https://hooks.example.com/', events: [] } })
  t.equal(res.statusCode, 400)
  const unknown = await request({ method: 'POST', url: '/api/automation/subscriptions', token: member.token, payload: { url: 'https://hooks.example.com/', events: ['workflow.run.exploded'] } })
  t.equal(unknown.statusCode, 400)
  t.match(unknown.json().message, /^Unknown event "workflow.run.exploded": events are workflow.run.succeeded, /)
  const other = await newMember()
  for (let i = 0; i < 25; i++) {
    t.equal((await request({ method: 'POST', url: '/api/automation/subscriptions', token: other.token, payload: { url: 'https://hooks.example.com/', events: ['chat.message.failed'] } })).statusCode, 201)
  }
  const over = await request({ method: 'POST', url: '/api/automation/subscriptions', token: other.token, payload: { url: 'https://hooks.example.com/', events: ['chat.message.failed'] } })
  t.match(over, { statusCode: 400 })
  t.equal(over.json().message, 'Too many subscriptions (max 25)')
})
