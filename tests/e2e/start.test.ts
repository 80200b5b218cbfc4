import t from 'tap'
import { startStack } from '@switchboard/testing/processes'

const stack = await startStack(t)

t.test('the real api and worker start; login gives a 24-hour token', async (t) => {
  const login = await stack.call('POST', '/api/auth/login', { body: { email: 'admin@example.com', password: 'admin-password' } })
  t.equal(login.status, 200)
  const payload = JSON.parse(Buffer.from(login.body.token.split('.')[1], 'base64url').toString())
  t.equal(payload.exp - payload.iat, 86400)
  t.match(stack.workers[0]?.output(), /worker started/)
})

t.test('protected routes answer 401 with the API\'s error body', async (t) => {
  const res = await stack.call('GET', '/api/automation/queues')
  t.equal(res.status, 401)
  t.same(res.body, { statusCode: 401, code: 'UNAUTHORIZED', error: 'Unauthorized', message: 'Unauthorized' })
})

t.test('SIGTERM shuts both processes down cleanly', async (t) => {
  const worker = stack.workers[0]!
  await worker.stop('SIGTERM')
  t.equal(worker.child.exitCode, 0)
  await stack.api.stop('SIGTERM')
  t.equal(stack.api.child.exitCode, 0)
})
