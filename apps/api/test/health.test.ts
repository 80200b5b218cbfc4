import t from 'tap'
import { createDatabase } from '@switchboard/core/db'
import { freePort } from '@switchboard/testing/processes'
import { buildTestApp } from './helper.ts'

t.test('readiness: Postgres and Redis up is ok', async (t) => {
  const { request } = await buildTestApp(t)
  const ready = await request({ method: 'GET', url: '/health/ready' })
  t.equal(ready.statusCode, 200)
  t.same(ready.json(), { status: 'ok', checks: { database: 'ok', redis: 'ok' }, details: { assistant: 'off: AI_MODEL is not set (an account may set its own model)' } })
})

t.test('readiness: Redis unreachable keeps the api ready and says degraded', async (t) => {
  const closedPort = await freePort()
  const { request } = await buildTestApp(t, { REDIS_URL: `redis://127.0.0.1:${closedPort}` })
  const ready = await request({ method: 'GET', url: '/health/ready' })
  t.equal(ready.statusCode, 200, 'still ready: the api degrades without Redis')
  t.match(ready.json(), { status: 'degraded', checks: { database: 'ok', redis: 'unavailable' } })
  const live = await request({ method: 'GET', url: '/health/live' })
  t.equal(live.statusCode, 200)
})

t.test('readiness: Postgres unreachable is not ready', async (t) => {
  const closedPort = await freePort()
  const { app, request } = await buildTestApp(t)
  // The pool of the running app pointed elsewhere: the app was built (and the admin seeded) on a live database.
  const dead = createDatabase(`postgres://postgres@127.0.0.1:${closedPort}/none`, { max: 1 })
  const live = app.database
  Object.assign(app, { database: dead })
  t.teardown(async () => { Object.assign(app, { database: live }); await dead.close() })
  const ready = await request({ method: 'GET', url: '/health/ready' })
  t.equal(ready.statusCode, 503)
  t.match(ready.json(), { status: 'unavailable', checks: { database: 'unavailable', redis: 'ok' } })
})
