import t from 'tap'
import { startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

// Runs started by parents passed the start quota: with runsPerMinute 5, three fires of foreach ×
// parallel workflows made 700–764 runs in 6 s. Children now count against their parent owner's
// runsPerMinute by clock minute; beyond it they wait PENDING for a minute with room, never refused.
const PER_MINUTE = 5
const ITEMS = 20
const stack = await startStack(t)
const adminToken = await stack.adminToken()
const member = await stack.client.newUser(adminToken)
t.equal((await stack.client.call('PATCH', `/api/users/${member.id}`, { token: adminToken, body: { quotas: { runsPerMinute: PER_MINUTE } } })).status, 200)

interface Run { id: string, status: string }
const childrenOf = async (runId: string): Promise<Run[]> =>
  (await stack.client.call('GET', `/api/automation/runs?parentRunId=${runId}&limit=500`, { token: member.token })).body

t.test(`a fan-out of ${ITEMS} children starts ${PER_MINUTE} in the minute, the others wait PENDING; a parallel node's branches wait too`, async (t) => {
  // The minute's room is the assertion: a fan-out started in the last seconds of a minute would see two.
  const secondOfMinute = new Date().getSeconds()
  if (secondOfMinute >= 50) await new Promise((resolve) => setTimeout(resolve, (61 - secondOfMinute) * 1000))

  const child = await stack.client.createWorkflow(member.token, { name: 'child', isActive: false, nodes: [{ id: 'n', type: 'set', config: { values: { ok: true } } }] })
  const parent = await stack.client.createWorkflow(member.token, {
    name: 'fan-out',
    nodes: [{ id: 'loop', type: 'foreach', config: { workflowId: child, items: '{{triggerData.items}}', concurrency: ITEMS } }]
  })
  const runId = await stack.client.fire(member.token, parent, { items: Array.from({ length: ITEMS }, (_, n) => n) })
  await waitFor(async () => {
    const children = await childrenOf(runId)
    return children.length === ITEMS && children.filter((run) => run.status === 'SUCCESS').length >= PER_MINUTE ? true : undefined
  }, { what: `${PER_MINUTE} children to end` })

  const forked = await stack.client.fire(member.token, await stack.client.createWorkflow(member.token, {
    name: 'fork',
    nodes: [
      { id: 'fork', type: 'parallel', config: { branches: ['a', 'b'] } },
      { id: 'a', type: 'set', config: { values: { a: true } }, next: 'join' },
      { id: 'b', type: 'set', config: { values: { b: true } }, next: 'join' },
      { id: 'join', type: 'merge', config: {} }
    ]
  }))
  await waitFor(async () => (await childrenOf(forked)).length === 2 ? true : undefined, { what: 'the branches to be stored' })
  // Long enough for every held child to have run, had it not been held (20 one-node runs take well under a second here).
  await new Promise((resolve) => setTimeout(resolve, 1500))

  const children = await childrenOf(runId)
  t.equal(children.length, ITEMS, 'every child is stored: none refused')
  t.equal(children.filter((run) => run.status !== 'PENDING').length, PER_MINUTE, `${PER_MINUTE} started this minute`)
  t.equal(children.filter((run) => run.status === 'PENDING').length, ITEMS - PER_MINUTE, 'the others wait PENDING')
  t.same((await childrenOf(forked)).map((run) => run.status), ['PENDING', 'PENDING'], 'the branches wait for the next minute')
  const run = (await stack.client.call('GET', `/api/automation/runs/${runId}`, { token: member.token })).body
  t.equal(run.status, 'WAITING', 'the parent waits for its children')
})
