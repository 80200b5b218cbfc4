import t from 'tap'
import { Webhook } from 'standardwebhooks'
import { blockedHostReason } from '../src/engine/nodes/http-client.ts'
import { nextRetryDelayMs } from '../src/subscriptions/backoff.ts'
import { deliveryBody, generateSecret, secretProblem, signedHeaders } from '../src/subscriptions/signing.ts'

t.test('signing: a subscriber verifies each attempt with the standardwebhooks package; a change of body, id or secret fails', async (t) => {
  const secret = generateSecret()
  t.equal(secretProblem(secret), undefined, 'a generated secret is valid')
  const at = new Date()
  const body = deliveryBody('workflow.run.failed', new Date('2026-11-27T10:00:00Z'), { runId: 'r1', workflowId: 'w1', error: 'boom' })
  t.same(JSON.parse(body), { type: 'workflow.run.failed', timestamp: '2026-11-27T10:00:00.000Z', data: { runId: 'r1', workflowId: 'w1', error: 'boom' } })
  const headers = signedHeaders(secret, 'dabc', body, at)
  t.same(Object.keys(headers), ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
  t.equal(headers['webhook-id'], 'dabc')
  t.equal(headers['webhook-timestamp'], String(Math.floor(at.getTime() / 1000)))
  t.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/)
  t.same(new Webhook(secret).verify(body, headers), JSON.parse(body))
  t.throws(() => new Webhook(secret).verify(body.replace('boom', 'bang'), headers), 'another body')
  t.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'other' }), 'another id')
  t.throws(() => new Webhook(generateSecret()).verify(body, headers), 'another secret')
  const stale = signedHeaders(secret, 'dabc', body, new Date(Date.now() - 10 * 60_000))
  t.throws(() => new Webhook(secret).verify(body, stale), 'a timestamp older than the 5 minutes the package tolerates')
})

t.test('secrets: whsec_ and the base64 of 24 to 64 bytes', async (t) => {
  const of = (bytes: number): string => `whsec_${Buffer.alloc(bytes, 1).toString('base64')}`
  t.equal(secretProblem(of(24)), undefined)
  t.equal(secretProblem(of(64)), undefined)
  for (const bad of [of(23), of(65), Buffer.alloc(32).toString('base64'), 'whsec_not base64!', 'whsec_', 'whsec_QUJD']) {
    t.match(secretProblem(bad), /^secret must be "whsec_" followed by the base64 of 24 to 64 bytes$/, bad)
  }
})

t.test('backoff: doubling from the base, capped, until the waits pass the window', async (t) => {
  const policy = { retryBaseMs: 30_000, retryMaxDelayMs: 3_600_000, retryWindowMs: 86_400_000 }
  t.same([1, 2, 3, 4, 5, 6, 7, 8, 9].map((attempt) => nextRetryDelayMs(attempt, policy)), [30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000, 3_600_000])
  t.equal(nextRetryDelayMs(20, policy), 3_600_000, 'capped at the longest wait')
  // 30 s … 32 min add up to 3810 s; then an hour each: 22 more fit in the day's 86,400 s.
  let attempts = 0
  while (nextRetryDelayMs(attempts + 1, policy) !== null) attempts++
  t.equal(attempts + 1, 30, 'the 30th failed attempt ends the delivery with the defaults')
  t.equal(nextRetryDelayMs(3, { retryBaseMs: 100, retryMaxDelayMs: 200, retryWindowMs: 600 }), 200)
  t.equal(nextRetryDelayMs(4, { retryBaseMs: 100, retryMaxDelayMs: 200, retryWindowMs: 600 }), null, 'waits of 100, 200, 200, 200 pass 600 ms')
  t.equal(nextRetryDelayMs(1, { ...policy, retryWindowMs: 0 }), null, 'a window of 0: one attempt only')
  t.equal(nextRetryDelayMs(1e9, policy), null, 'computed without a loop over every attempt')
})

t.test('subscription URLs: what the guard of http_request refuses by the host alone', async (t) => {
  for (const host of ['169.254.169.254', '[fd00:ec2::254]', '[::ffff:169.254.169.254]', 'metadata.google.internal', 'METADATA.GOOGLE.INTERNAL.', '100.100.100.200']) {
    t.match(blockedHostReason(host, true), /cloud metadata/, `${host}: refused even with private addresses allowed`)
  }
  t.match(blockedHostReason('169.254.1.1', true), /link-local/)
  for (const host of ['127.0.0.1', '10.0.0.1', '192.168.1.20', '[::1]', '[fc00::1]', '0.0.0.0']) {
    t.match(blockedHostReason(host, false), /private address/, `${host}: private`)
    t.equal(blockedHostReason(host, true), undefined, `${host}: allowed with HTTP_REQUEST_ALLOW_PRIVATE`)
  }
  t.equal(blockedHostReason('93.184.216.34', false), undefined, 'a public address')
  t.equal(blockedHostReason('hooks.example.com', false), undefined, 'a name: checked on its addresses at each delivery')
})
