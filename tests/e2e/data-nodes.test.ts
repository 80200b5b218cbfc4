import { createHash, createHmac } from 'node:crypto'
import t from 'tap'
import { startStack } from '@switchboard/testing/processes'

/** The data nodes (packages/core/src/engine/nodes) through the front door: a real api and worker. */

const stack = await startStack(t)
const token = await stack.adminToken()
const { client, call } = stack

const orders = [
  { id: 'A1', customer: 'ann', status: 'paid', total: 120 },
  { id: 'A2', customer: 'bob', status: 'paid', total: '80.50' },
  { id: 'A3', customer: 'ann', status: 'paid', total: 200 },
  { id: 'A4', customer: 'cy', status: 'refunded', total: 500 },
  { id: 'A5', customer: 'dee', status: 'paid', total: 5 },
  { id: 'A6', customer: 'bob', status: 'paid', total: 30 }
]

t.test('split → filter → sort → dedupe → aggregate → date → crypto: each output in the run’s result', async (t) => {
  const workflowId = await client.createWorkflow(token, {
    name: 'order report',
    nodes: [
      { id: 'orders', type: 'split', config: { value: '{{triggerData.shop}}', field: 'orders' }, next: 'paid' },
      {
        id: 'paid',
        type: 'filter',
        config: { items: '{{orders.items}}', conditions: [{ field: 'status', operator: 'equals', value: 'paid' }, { field: 'total', operator: 'gte', value: '{{triggerData.minimum}}' }] },
        next: 'biggest'
      },
      { id: 'biggest', type: 'sort', config: { items: '{{paid.items}}', by: [{ field: 'total', order: 'desc' }] }, next: 'perCustomer' },
      { id: 'perCustomer', type: 'dedupe', config: { items: '{{biggest.items}}', fields: ['customer'] }, next: 'totals' },
      { id: 'totals', type: 'aggregate', config: { items: '{{perCustomer.items}}', operations: [{ op: 'sum', field: 'total', as: 'revenue' }, { op: 'max', field: 'total' }] }, next: 'due' },
      { id: 'due', type: 'date', config: { operation: 'add', value: '{{triggerData.placedAt}}', amount: { days: 7 }, timezone: 'Europe/Paris' }, next: 'fingerprint' },
      { id: 'fingerprint', type: 'crypto', config: { operation: 'hash', value: '{{totals.revenue}}|{{due.value}}' } }
    ]
  })
  const runId = await client.fire(token, workflowId, { shop: { orders }, minimum: 10, placedAt: '2024-03-25T09:30:00Z' })
  const run = await client.runReaching(token, runId, ['SUCCESS', 'FAILED'])

  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.result.orders, { items: orders })
  t.same(run.result.paid, { items: [orders[0], orders[1], orders[2], orders[5]], count: 4, removed: 2 })
  t.same(run.result.biggest, { items: [orders[2], orders[0], orders[1], orders[5]] }, 'decimal text sorted as a number')
  t.same(run.result.perCustomer, { items: [orders[2], orders[1]], removed: 2 })
  t.same(run.result.totals, { count: 2, revenue: 280.5, max_total: 200 })
  t.same(run.result.due, { value: '2024-04-01T10:30:00.000+02:00' }, 'seven calendar days in Paris: 10:30 there before and after the change of clocks')
  t.same(run.result.fingerprint, { value: createHash('sha256').update('280.5|2024-04-01T10:30:00.000+02:00').digest('hex') })
})

t.test('crypto signs with an hmac credential, which no other field of it may read', async (t) => {
  const secret = 'e2e-signing-secret'
  const created = await call('POST', '/api/automation/credentials', { token, body: { name: 'report-signing', type: 'hmac', data: { secret } } })
  t.equal(created.status, 201)
  const run = await client.runWorkflow(token, {
    nodes: [{ id: 'sign', type: 'crypto', config: { operation: 'hmac', value: '{{triggerData.payload}}', credential: 'report-signing', encoding: 'base64url' } }]
  }, { payload: { id: 'A1', total: 120 } })
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(run.result.sign, { value: createHmac('sha256', secret).update('{"id":"A1","total":120}').digest('base64url') })

  const copied = await call('POST', '/api/automation/workflows', {
    token,
    body: { name: 'hash a secret', triggerType: 'MANUAL', nodes: [{ id: 'leak', type: 'crypto', config: { operation: 'hash', value: '{{credentials.report-signing.secret}}' } }] }
  })
  t.equal(copied.status, 400)
  t.equal(copied.body.message, 'Node leak: credentials cannot be used in value: crypto nodes use them only in credential')
})

t.test('a data node given what it cannot use fails the run with the reason', async (t) => {
  const workflowId = await client.createWorkflow(token, {
    nodes: [{ id: 'paid', type: 'filter', config: { items: '{{triggerData.orders}}', conditions: [{ field: 'status', operator: 'equals', value: 'paid' }] } }]
  })
  const runId = await client.fire(token, workflowId, { orders: { A1: { status: 'paid' } } })
  const run = await client.runReaching(token, runId, ['SUCCESS', 'FAILED'])
  t.equal(run.status, 'FAILED')
  t.equal(run.error, 'items must be a list (an array), but it is an object ({{triggerData.orders}})')
  t.notOk('paid' in run.result)
})

t.test('a literal config the node cannot run is refused when saved; the types are listed', async (t) => {
  for (const [type, config, message] of [
    ['date', { operation: 'now', timezone: 'Mars/Olympus' }, 'Node n: timezone is not an IANA time zone (Europe/Paris, UTC): Mars/Olympus'],
    ['crypto', { operation: 'hash', value: 'x', algorithm: 'crc32' }, 'Node n: config.algorithm must be one of sha1, sha256, sha384, sha512, md5 (or a template)'],
    ['filter', { items: '{{triggerData.orders}}', conditions: [{ field: 'a', operator: 'matches', value: '(' }] }, 'Node n: conditions[0].value is not a valid regular expression (RE2 syntax): missing closing ): `(`']
  ] as const) {
    const res = await call('POST', '/api/automation/workflows', { token, body: { name: 'bad data node', triggerType: 'MANUAL', nodes: [{ id: 'n', type, config }] } })
    t.same(res.body, { statusCode: 400, code: 'VALIDATION_ERROR', error: message, message }, `${type} ${JSON.stringify(config)}`)
  }
  const listed = await call('GET', '/api/automation/node-types', { token })
  t.equal(listed.status, 200)
  const types = listed.body.nodeTypes.map((nodeType: { type: string }) => nodeType.type)
  t.ok(['split', 'filter', 'sort', 'dedupe', 'aggregate', 'date', 'crypto'].every((type) => types.includes(type)), types.join(', '))
})
