import t from 'tap'
import { buildTestApp } from './helper.ts'
import { planOf } from './query-plan.ts'

const testApp = await buildTestApp(t)
const { app, request, adminToken, newMember } = testApp
const sql = app.database.sql

const MINUTE_MS = 60_000

const fire = async (id: string, token: string): Promise<string> => {
  const res = await request({ method: 'POST', url: `/api/automation/workflows/${id}/fire`, token, payload: {} })
  if (res.statusCode !== 202) throw new Error(`fire: ${res.statusCode} ${res.body}`)
  return res.json().runId
}

/** Moves a run in time and status, as if it had been created `minutesAgo` minutes ago and ended so. */
const place = async (runId: string, minutesAgo: number, status: string): Promise<void> => {
  await sql`update runs set status = ${status}, created_at = now() - make_interval(mins => ${minutesAgo}) where id = ${runId}`
}

interface Bucket { minute: string, counts: Record<string, number> }

const stats = async (token: string, query = '') => {
  const res = await request({ method: 'GET', url: `/api/automation/runs/stats${query}`, token })
  return { status: res.statusCode, body: res.json() }
}

const total = (buckets: Bucket[], status: string): number => buckets.reduce((sum, bucket) => sum + bucket.counts[status], 0)

t.test('stats: runs per minute of the last hour by status, one bucket per minute, empty minutes included', async (t) => {
  const member = await newMember()
  const workflowId = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  const other = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  const runIds = await Promise.all([fire(workflowId, member.token), fire(workflowId, member.token), fire(workflowId, member.token), fire(other, member.token), fire(workflowId, member.token)])
  await place(runIds[0], 0, 'SUCCESS')
  await place(runIds[1], 0, 'FAILED')
  await place(runIds[2], 5, 'SUCCESS')
  await place(runIds[3], 5, 'SUCCESS')
  await place(runIds[4], 90, 'SUCCESS')

  const { status, body } = await stats(member.token)
  t.equal(status, 200)
  t.equal(body.bucketSeconds, 60)
  t.equal(body.buckets.length, 60, 'sixty minutes, the current one included')
  const minutes = body.buckets.map((bucket: Bucket) => Date.parse(bucket.minute))
  t.ok(minutes.every((minute: number, i: number) => minute % MINUTE_MS === 0 && (i === 0 || minute - minutes[i - 1] === MINUTE_MS)), 'whole minutes, oldest first, one apart')
  t.equal(Date.parse(body.since), minutes[0])
  t.ok(Date.parse(body.until) - minutes[59] < MINUTE_MS, 'the last bucket is the current minute')
  t.same(Object.keys(body.buckets[0].counts).sort(), ['CANCELLED', 'FAILED', 'PENDING', 'RUNNING', 'SUCCESS', 'WAITING'], 'every status counted, zeros included')

  const last = body.buckets[59].counts
  const fiveAgo = body.buckets[54].counts
  // A run placed at the turn of a minute may fall one bucket earlier; the totals are exact.
  t.equal(last.FAILED + body.buckets[58].counts.FAILED, 1, 'the failed run of this minute')
  t.equal(fiveAgo.SUCCESS + body.buckets[53].counts.SUCCESS, 2, 'two successes five minutes ago, of two workflows')
  t.equal(total(body.buckets, 'SUCCESS'), 3, 'the run of 90 minutes ago is outside the hour')
  t.equal(total(body.buckets, 'PENDING'), 0)

  const ofOne = await stats(member.token, `?workflowId=${workflowId}`)
  t.equal(total(ofOne.body.buckets, 'SUCCESS'), 2, 'workflowId narrows the counts to one workflow')
  const longer = await stats(member.token, '?minutes=120')
  t.equal(longer.body.buckets.length, 120)
  t.equal(total(longer.body.buckets, 'SUCCESS'), 4, 'a two-hour window reaches the older run')

  t.test('owner scoping: a stranger counts none of them, an admin counts them all', async (t) => {
    const stranger = await newMember()
    const strangers = await stats(stranger.token)
    t.equal(total(strangers.body.buckets, 'SUCCESS') + total(strangers.body.buckets, 'FAILED'), 0)
    const theirWorkflow = await stats(stranger.token, `?workflowId=${workflowId}`)
    t.equal(total(theirWorkflow.body.buckets, 'SUCCESS'), 0, 'naming another user\'s workflow reveals nothing')
    const admins = await stats(adminToken, `?workflowId=${workflowId}`)
    t.equal(total(admins.body.buckets, 'SUCCESS'), 2)
  })
})

t.test('stats: the window is bounded and bad input is a 400 in the API\'s error shape', async (t) => {
  for (const [query, message] of [
    ['?minutes=0', 'minutes must be >= 1'],
    ['?minutes=1441', 'minutes must be <= 1440'],
    ['?minutes=abc', 'minutes must be integer']
  ]) {
    const { status, body } = await stats(adminToken, query)
    t.equal(status, 400, query)
    t.match(body, { statusCode: 400, code: 'VALIDATION_ERROR', message }, query)
  }
  t.equal((await stats(adminToken, '?minutes=1')).body.buckets.length, 1)
  t.equal((await request({ method: 'GET', url: '/api/automation/runs/stats' })).statusCode, 401)
})

t.test('stats read the created-at indexes, not every run', async (t) => {
  const member = await newMember()
  const workflowId = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  await fire(workflowId, member.token)
  for (const [what, token, url] of [
    ['admin', adminToken, '/api/automation/runs/stats'],
    ['member', member.token, '/api/automation/runs/stats'],
    ['one workflow', member.token, `/api/automation/runs/stats?workflowId=${workflowId}`]
  ] as const) {
    const plan = await planOf(testApp, token, url, /from "runs"/)
    t.notMatch(plan, /Seq Scan/, `${what}:\n${plan}`)
    t.match(plan, /Index (Only )?Scan using runs_\w+_idx|Bitmap Index Scan on runs_\w+_idx/, `${what}: an index of runs serves the window`)
  }
})

t.test('the run list takes a time window: since (inclusive) and until (exclusive) on createdAt', async (t) => {
  const member = await newMember()
  const workflowId = await testApp.client.createWorkflow(member.token, { triggerType: 'MANUAL' })
  const [old, recent] = [await fire(workflowId, member.token), await fire(workflowId, member.token)]
  // A time of whole milliseconds, so that the ISO text names it exactly.
  const createdAt = new Date(Math.floor(Date.now() / 1000) * 1000 - 120 * MINUTE_MS)
  await sql`update runs set created_at = ${createdAt.toISOString()} where id = ${old}`
  const list = async (query: string): Promise<string[]> => {
    const res = await request({ method: 'GET', url: `/api/automation/runs?workflowId=${workflowId}&${query}`, token: member.token })
    t.equal(res.statusCode, 200, query)
    return res.json().map((run: { id: string }) => run.id)
  }
  const hourAgo = new Date(Date.now() - 60 * MINUTE_MS).toISOString()
  t.same(await list(`since=${hourAgo}`), [recent])
  t.same(await list(`until=${hourAgo}`), [old])
  t.same(await list(`since=${createdAt.toISOString()}&until=${hourAgo}`), [old], 'since is inclusive')
  t.same(await list(`until=${createdAt.toISOString()}`), [], 'until is exclusive')

  for (const query of ['since=yesterday', 'until=2026-13-01T00:00:00Z', 'since=2026-06-30T23:59:60Z']) {
    const res = await request({ method: 'GET', url: `/api/automation/runs?${query}`, token: member.token })
    t.equal(res.statusCode, 400, query)
    t.match(res.json().message, /^(since|until) must be an ISO 8601 date-time$/, query)
  }
  const plan = await planOf(testApp, member.token, `/api/automation/runs?since=${hourAgo}`, /from "runs"/)
  t.notMatch(plan, /Sort|Seq Scan/, `a window of the member's runs:\n${plan}`)
})
