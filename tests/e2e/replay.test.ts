/**
 * Replay (issue 15, item 4), through the real api and worker: a finished run started again with
 * its triggerData and raw body, on the current version or its own, linked by retriedFrom; and the
 * bulk retry of a time range, bounded, each run replayed once.
 */
import { createHmac } from 'node:crypto'
import t from 'tap'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import type { RunBody } from '@switchboard/testing/client'

/** The loopback sink: /fail answers 404, anything else 200 with what it received. */
const sink = await startDeliverySink(t, {
  answer: ({ path, body }) => path === '/fail' ? { status: 404 } : { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ got: body }) }
})

const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
const token = await stack.adminToken()
const { client, call } = stack

const retry = async (runId: string, body?: unknown, as = token, headers?: Record<string, string>) =>
  await call('POST', `/api/automation/runs/${runId}/retry`, { token: as, body, headers })

/** Replays `runId` and waits for the replay to finish. */
async function retried (runId: string, body?: unknown): Promise<RunBody> {
  const res = await retry(runId, body)
  if (res.status !== 202 || res.body.retriedFrom !== runId) throw new Error(`retry ${runId}: ${res.status} ${JSON.stringify(res.body)}`)
  return await client.runReaching(token, res.body.runId)
}

const callNode = (url: string) => ({ id: 'call', type: 'http_request', config: { method: 'POST', url, body: { order: '{{triggerData.order}}' } } })

t.test('a FAILED run replayed on the current version after an edit, and on its own: same triggerData, linked by retriedFrom', async (t) => {
  const workflowId = await client.createWorkflow(token, { nodes: [callNode(`${sink.url}/fail`)] })
  const first = await client.runReaching(token, await client.fire(token, workflowId, { order: 42 }))
  t.equal(first.status, 'FAILED')
  t.equal(first.retriedFrom, null, 'a run that is not a replay says so')

  const fixed = await call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body: { nodes: [callNode(`${sink.url}/orders`)] } })
  t.equal(fixed.body.version, 2)

  const answer = await retry(first.id)
  t.equal(answer.status, 202)
  t.same(Object.keys(answer.body).sort(), ['retriedFrom', 'runId'], 'answered like /fire, with the run replayed')
  t.equal(answer.body.retriedFrom, first.id)
  t.equal((await client.runReaching(token, answer.body.runId)).retriedFrom, first.id)

  const onCurrent = await retried(first.id)
  t.equal(onCurrent.status, 'SUCCESS', onCurrent.error ?? '')
  t.equal(onCurrent.workflowVersion, 2)
  t.equal(onCurrent.retriedFrom, first.id)
  t.same(onCurrent.triggerData, { order: 42 })
  t.same(onCurrent.result.call.body, { got: '{"order":42}' })

  const onOriginal = await retried(first.id, { version: 'original' })
  t.equal(onOriginal.status, 'FAILED')
  t.equal(onOriginal.workflowVersion, 1)
  t.equal(onOriginal.error, 'Request failed with status 404')
  t.same(onOriginal.triggerData, { order: 42 })
  t.equal((await retried(first.id, { version: 'current' })).workflowVersion, 2, '"current" may be said')

  const listed = await client.runsOf(token, workflowId)
  t.same(listed.map((run) => run.retriedFrom), [first.id, first.id, first.id, first.id, null], 'the run list carries retriedFrom')
  const replayOfReplay = await retried(onOriginal.id)
  t.equal(replayOfReplay.retriedFrom, onOriginal.id, 'a replay can be replayed, linked to the run it replays')
})

t.test('a webhook run verified with verify_signature is replayed with its raw body: the signature still checks', async (t) => {
  const secret = 'replay-secret'
  const nodes = (url: string) => [
    { id: 'verify', type: 'verify_signature', config: { secret, header: 'x-signature', prefix: 'sha256=' }, next: 'call' },
    { ...callNode(url), config: { method: 'POST', url, body: { order: '{{triggerData.body.order}}' } } }
  ]
  const workflowId = await client.createWorkflow(token, { triggerType: 'WEBHOOK', nodes: nodes(`${sink.url}/fail`) })
  // Spacing a re-serialisation would change: the HMAC is over the exact bytes.
  const body = '{ "order":7 ,  "note": "spaced" }'
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
  const res = await fetch(`${stack.baseUrl}/api/automation/webhook/${workflowId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-signature': signature }, body })
  const { runId } = await res.json() as { runId: string }
  const first = await client.runReaching(token, runId)
  t.equal(first.status, 'FAILED')
  t.equal(first.error, 'Request failed with status 404', 'the signature passed, the call failed')

  await call('PATCH', `/api/automation/workflows/${workflowId}`, { token, body: { nodes: nodes(`${sink.url}/hooks`) } })
  const replay = await retried(first.id)
  t.equal(replay.status, 'SUCCESS', replay.error ?? '')
  t.same(replay.result.verify, { valid: true })
  t.same(replay.triggerData, first.triggerData, 'body, headers and query as they came')
  t.same(replay.result.call.body, { got: '{"order":7}' })
})

t.test('what cannot be replayed: another member\'s run (404), an unfinished run (409), an inactive workflow (400), a bad version (400)', async (t) => {
  const owner = await client.newUser(token)
  const other = await client.newUser(token)
  const workflowId = await client.createWorkflow(owner.token, { nodes: [{ id: 'pause', type: 'wait', config: { seconds: 30 } }] })
  const waiting = await client.runReaching(owner.token, await client.fire(owner.token, workflowId), ['WAITING'])

  const notFound = { statusCode: 404, code: 'RUN_NOT_FOUND', error: 'Run not found', message: 'Run not found' }
  t.same((await retry(waiting.id, undefined, other.token)).body, notFound, 'another member\'s run is not found')
  t.same((await retry('not-a-run-id', undefined, owner.token)).body, notFound)
  const unfinished = await retry(waiting.id, undefined, owner.token)
  t.same(unfinished.body, { statusCode: 409, code: 'RUN_NOT_FINISHED', error: 'Run is not finished: only a finished run can be retried', message: 'Run is not finished: only a finished run can be retried' })

  const cancelled = await call('POST', `/api/automation/runs/${waiting.id}/cancel`, { token: owner.token })
  t.equal(cancelled.body.retriedFrom, null, 'the cancel answer carries retriedFrom too')
  t.equal((await retry(waiting.id, undefined, token)).status, 202, 'an admin may replay anyone\'s finished run')
  await call('PATCH', `/api/automation/workflows/${workflowId}`, { token: owner.token, body: { isActive: false } })
  t.same((await retry(waiting.id, undefined, owner.token)).body, { statusCode: 400, code: 'WORKFLOW_NOT_ACTIVE', error: 'Workflow is not active', message: 'Workflow is not active' })
  const badVersion = await retry(waiting.id, { version: 'latest' }, owner.token)
  t.same([badVersion.status, badVersion.body.message], [400, 'version must be one of current, original'])
})

t.test('Idempotency-Key: the same key for the same run gives the first replay back', async (t) => {
  const workflowId = await client.createWorkflow(token, { nodes: [callNode(`${sink.url}/fail`)] })
  const first = await client.runReaching(token, await client.fire(token, workflowId, { order: 1 }))
  const headers = { 'idempotency-key': 'replay-once' }
  const [a, b] = [await retry(first.id, undefined, token, headers), await retry(first.id, undefined, token, headers)]
  t.equal(a.status, 202)
  t.equal(b.body.runId, a.body.runId)
  const second = await client.runReaching(token, await client.fire(token, workflowId, { order: 2 }))
  t.not((await retry(second.id, undefined, token, headers)).body.runId, a.body.runId, 'the key is per run retried')
})

t.test('bulk retry: the failed runs of a range, 500 per call, each replayed once even by calls made at once', async (t) => {
  // verify_signature fails at once in memory for a run that is not a webhook's: cheap failed runs.
  const workflowId = await client.createWorkflow(token, { nodes: [{ id: 'check', type: 'verify_signature', config: { secret: 's', header: 'x-signature' } }] })
  const fireMany = async (count: number): Promise<string[]> => {
    const ids: string[] = []
    const lanes = Array.from({ length: 8 }, async () => {
      while (ids.length < count) {
        ids.push('')
        const index = ids.length - 1
        ids[index] = await client.fire(token, workflowId, { n: index })
      }
    })
    await Promise.all(lanes)
    return ids
  }
  const [before] = await fireMany(1)
  const inRange = await fireMany(503)
  const [after] = await fireMany(1)
  const created = async (id: string): Promise<number> => Date.parse((await client.runReaching(token, id, ['FAILED'], { timeoutMs: 120_000 })).createdAt)
  const beforeAt = await created(before!)
  const afterAt = await created(after!)
  for (const id of inRange) await client.runReaching(token, id, ['FAILED'], { timeoutMs: 120_000 })
  const range = { from: new Date(beforeAt + 1).toISOString(), to: new Date(afterAt).toISOString() }
  t.ok(Math.min(...await Promise.all(inRange.slice(0, 5).map(created))) > beforeAt, 'the runs of the range come after the first one')

  const bulk = async (body: unknown, as = token) => await call('POST', `/api/automation/workflows/${workflowId}/runs/retry`, { token: as, body })
  const [one, two] = await Promise.all([bulk(range), bulk(range)])
  t.same([one.status, two.status], [202, 202])
  const answers = [one.body, two.body].sort((x, y) => y.runs.length - x.runs.length)
  t.same(answers.map((answer) => [answer.runs.length, answer.more]), [[500, true], [3, false]], 'one call took 500 and said more remain, the other the rest')
  const last = await bulk(range)
  t.same(last.body, { runs: [], more: false }, 'nothing is replayed twice')

  const replayed = answers.flatMap((answer) => answer.runs)
  t.same(new Set(replayed.map((run: { retriedFrom: string }) => run.retriedFrom)), new Set(inRange), 'exactly the runs of the range, each once')
  const sample = await client.getRun(token, replayed[0].runId)
  t.equal(sample.retriedFrom, replayed[0].retriedFrom)
  t.same(sample.triggerData, (await client.getRun(token, replayed[0].retriedFrom)).triggerData)
})

t.test('bulk retry: version original, status CANCELLED, owner scoping, inactive workflows and bad ranges', async (t) => {
  const owner = await client.newUser(token)
  const other = await client.newUser(token)
  const workflowId = await client.createWorkflow(owner.token, { nodes: [{ id: 'pause', type: 'wait', config: { seconds: 60 } }] })
  const runId = await client.fire(owner.token, workflowId)
  await client.runReaching(owner.token, runId, ['WAITING'])
  await call('POST', `/api/automation/runs/${runId}/cancel`, { token: owner.token })
  await call('PATCH', `/api/automation/workflows/${workflowId}`, { token: owner.token, body: { nodes: [{ id: 'done', type: 'set', config: { values: { v: 2 } } }] } })
  const range = { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() }
  const bulk = async (body: unknown, as = owner.token) => await call('POST', `/api/automation/workflows/${workflowId}/runs/retry`, { token: as, body })

  t.same((await bulk(range)).body, { runs: [], more: false }, 'FAILED runs by default: the cancelled run is not one')
  t.same((await bulk(range, other.token)).body, { statusCode: 404, code: 'WORKFLOW_NOT_FOUND', error: 'Workflow not found', message: 'Workflow not found' })
  const cancelled = await bulk({ ...range, status: 'CANCELLED', version: 'original' })
  t.equal(cancelled.status, 202)
  t.same(cancelled.body.runs.map((run: { retriedFrom: string }) => run.retriedFrom), [runId])
  const replay = await client.runReaching(owner.token, cancelled.body.runs[0].runId, ['WAITING'])
  t.equal(replay.workflowVersion, 1, 'the version the cancelled run executed')

  const refusals: Array<[unknown, string]> = [
    [{ from: range.from }, 'to is required'],
    [{ ...range, from: 'yesterday' }, 'from must be an ISO 8601 date-time'],
    [{ from: range.to, to: range.from }, 'to must be after from'],
    [{ ...range, status: 'SUCCESS' }, 'status must be one of FAILED, CANCELLED'],
    [{ ...range, version: 'v1' }, 'version must be one of current, original']
  ]
  for (const [body, message] of refusals) {
    t.same((await bulk(body)).body, { statusCode: 400, code: 'VALIDATION_ERROR', error: message, message }, message)
  }
  await call('PATCH', `/api/automation/workflows/${workflowId}`, { token: owner.token, body: { isActive: false } })
  t.same((await bulk(range)).body, { statusCode: 400, code: 'WORKFLOW_NOT_ACTIVE', error: 'Workflow is not active', message: 'Workflow is not active' })
})
