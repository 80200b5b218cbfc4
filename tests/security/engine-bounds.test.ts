import t, { type Test } from 'tap'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import type { RunBody } from '@switchboard/testing/client'

/**
 * Hostile workflow data against a real worker: inputs that used to block its
 * event loop for hours (a template scanned by a backtracking regular
 * expression, a catastrophic `matches` pattern) or kill it (an output that
 * serializes to gigabytes, JSON too deep to serialize again). Each run must
 * end with a clear outcome, its node run once, while other runs go on.
 */

// An answer Node parses but cannot serialize again (JSON.stringify overflows the stack).
const deepJson = '['.repeat(100_000) + ']'.repeat(100_000)
const server = await startDeliverySink(t, { answer: () => ({ headers: { 'content-type': 'application/json' }, body: deepJson }) })

// Twice the default node output bound, so the error shows the worker reads its setting.
const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true', NODE_OUTPUT_MAX_BYTES: '2097152' } })
const token = await stack.adminToken()

const { client } = stack
const createWorkflow = async (nodes: unknown[]): Promise<string> => client.createWorkflow(token, { nodes })
const fire = async (workflowId: string, triggerData: unknown): Promise<string> => client.fire(token, workflowId, triggerData)
const finished = async (runId: string, timeoutMs = 20_000): Promise<RunBody> => client.runReaching(token, runId, undefined, { timeoutMs })

const startedLines = (run: RunBody, nodeId: string): number => run.logs.filter((line) => line.nodeId === nodeId && line.message.startsWith(`Node ${nodeId} (`)).length
const takeovers = (run: RunBody): number => run.logs.filter((line) => line.message.startsWith('Run taken over')).length

/** The run failed with `error`, its node started once and no worker took the run over. */
function failedOnce (t: Test, run: RunBody, nodeId: string, error: string): void {
  t.equal(run.status, 'FAILED')
  t.equal(run.error, error)
  t.equal(startedLines(run, nodeId), 1)
  t.equal(takeovers(run), 0)
}

const unclosedTemplate = '{{' + ' '.repeat(40_000)
const hostile = {
  template: await fire(await createWorkflow([{ id: 'render', type: 'set', config: { values: { text: unclosedTemplate } } }]), {}),
  regex: await fire(await createWorkflow([
    { id: 'check', type: 'condition', config: { field: 'triggerData.text', operator: 'matches', value: '^(a|a)*$', then: 'yes', else: 'no' } },
    { id: 'yes', type: 'set', config: { values: { matched: true } } },
    { id: 'no', type: 'set', config: { values: { matched: false } } }
  ]), { text: 'a'.repeat(40) + '!' }),
  amplify: await fire(await createWorkflow([{
    id: 'amplify',
    type: 'set',
    config: { values: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`copy${i}`, '{{triggerData}}'])) }
  }]), { blob: 'x'.repeat(1_000_000) }),
  deep: await fire(await createWorkflow([{ id: 'call', type: 'http_request', config: { url: `${server.url}/deep` } }]), {})
}

t.test('while the hostile runs are processed, simple runs on the same worker complete promptly', async (t) => {
  const simple = await createWorkflow([{ id: 'echo', type: 'set', config: { values: { n: '{{triggerData.n}}' } } }])
  for (let n = 0; n < 5; n++) {
    const started = Date.now()
    const run = await finished(await fire(simple, { n }), 5000)
    t.equal(run.status, 'SUCCESS')
    t.same(run.result.echo, { n })
    t.ok(Date.now() - started < 5000, `simple run ${n} done in ${Date.now() - started}ms`)
  }
})

t.test('a node config with {{ before 40,000 spaces renders as text at once', async (t) => {
  const run = await finished(hostile.template)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.equal(run.result.render.text, unclosedTemplate)
})

t.test('matches with ^(a|a)*$ on forty a and a ! is answered by RE2 in linear time', async (t) => {
  const run = await finished(hostile.regex)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.match(run.result.check, { matched: false, next: 'no' })
  t.same(run.result.no, { matched: false })
})

t.test('a set node copying a 1 MB payload 2,000 times fails once with NODE_OUTPUT_MAX_BYTES', async (t) => {
  const run = await finished(hostile.amplify)
  failedOnce(t, run, 'amplify', 'Rendered config exceeds 2097152 bytes')
  t.notOk('amplify' in run.result)
})

t.test('an http_request answered with JSON nested 100,000 deep fails its node once; the job is not retried', async (t) => {
  failedOnce(t, await finished(hostile.deep), 'call', 'Response body nesting is too deep: more than 100 levels')
  t.equal(server.deliveries.length, 1)
  // A job that threw would be waiting for its retry (delayed) or have failed for good.
  const queues = await stack.call('GET', '/api/automation/queues', { token })
  t.match(queues.body.queues.find((queue: { name: string }) => queue.name === 'workflow-runs'), { delayed: 0, failed: 0 })
})

t.test('a matches pattern RE2 cannot run is refused when saved, or fails its node when it comes from a template', async (t) => {
  const condition = (value: string): unknown => ({ id: 'check', type: 'condition', config: { field: 'triggerData.text', operator: 'matches', value } })
  const refused = await stack.call('POST', '/api/automation/workflows', { token, body: { name: 'bad pattern', triggerType: 'MANUAL', nodes: [condition('(a)\\1')] } })
  t.equal(refused.status, 400)
  t.match(refused.body, { statusCode: 400, code: 'VALIDATION_ERROR', message: 'Node check: value is not a valid regular expression (RE2 syntax): invalid escape sequence: `\\1`' })

  const workflowId = await createWorkflow([condition('{{triggerData.pattern}}')])
  const run = await finished(await fire(workflowId, { text: 'ab', pattern: 'a(?=b)' }))
  t.equal(run.status, 'FAILED')
  t.equal(run.error, 'value is not a valid regular expression (RE2 syntax): invalid or unsupported Perl syntax: `(?=`')
  t.equal(startedLines(run, 'check'), 1)
})
