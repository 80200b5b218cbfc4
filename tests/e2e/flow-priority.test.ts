/**
 * flowControl.priority through the real api and a worker (README, Flow control): in a line of waiting runs (a
 * concurrency key's, and maxConcurrentRuns'), a higher priority goes first, and a priority key that floods the
 * line takes turns with another key instead of going ahead of it.
 */
import t from 'tap'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

const sink = await startDeliverySink(t, { delayMs: (path) => Number(path.split('/')[3] ?? 0) })
const stack = await startStack(t, { workers: 1, env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true', RECONCILER_INTERVAL_MS: '1000' } })
const token = await stack.adminToken()
const { client } = stack

const priority = { value: '{{triggerData.p}}', key: '{{triggerData.customer}}' }
const lines = {
  'a concurrency key': { flowControl: { concurrency: { key: 'one line', limit: 1 }, priority } },
  maxConcurrentRuns: { maxConcurrentRuns: 1, flowControl: { priority } }
}

for (const [line, settings] of Object.entries(lines)) {
  t.test(`${line}: the priority-10 run goes first; customer b's run takes its turn before customer a's burst is through`, async (t) => {
    const tag = line.replaceAll(' ', '-')
    const workflowId = await client.createWorkflow(token, {
      name: `priority ${line}`,
      ...settings,
      nodes: [{ id: 'call', type: 'http_request', config: { method: 'POST', url: `${sink.url}/${tag}/{{triggerData.n}}/{{triggerData.holdMs}}` } }]
    })
    // The first run holds the line while the others arrive, in the order fired.
    const runIds = [await client.fire(token, workflowId, { n: 'first', p: 1, customer: 'x', holdMs: 1500 })]
    await waitFor(async () => sink.deliveries.some((call) => call.path.startsWith(`/${tag}/first/`)) ? true : undefined, { what: 'the first run to hold the line' })
    for (let i = 0; i < 5; i++) runIds.push(await client.fire(token, workflowId, { n: `a${i}`, p: 1, customer: 'a', holdMs: 10 }))
    runIds.push(await client.fire(token, workflowId, { n: 'b0', p: 1, customer: 'b', holdMs: 10 }))
    runIds.push(await client.fire(token, workflowId, { n: 'urgent', p: 10, customer: 'c', holdMs: 10 }))
    const ended = await Promise.all(runIds.map(async (runId) => await client.runReaching(token, runId, undefined, { timeoutMs: 60_000 })))
    t.same(ended.map((run) => run.status), Array(8).fill('SUCCESS'))
    const called = sink.deliveries.filter((call) => call.path.startsWith(`/${tag}/`)).map((call) => call.path.split('/')[2])
    t.same(called.slice(0, 3), ['first', 'urgent', 'a0'], 'the priority-10 run ahead of the six fired before it')
    // a's runs are placed a second apart: b0, fired right after them, comes before a2 (a1 too, unless firing took over a second).
    t.ok(called.indexOf('b0') < called.indexOf('a2'), `b0 took its turn (${called.join(', ')})`)
    t.same(called.filter((n) => n.startsWith('a')), ['a0', 'a1', 'a2', 'a3', 'a4'], 'a key\'s own runs keep their order')
  })
}
