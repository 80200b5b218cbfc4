import t from 'tap'
import { startStack } from '@switchboard/testing/processes'
import { sendWhileProbing } from './event-loop.ts'

// The inbound webhook is public: a form body used to be parsed in quadratic time (every repeated
// field copied the array so far) before the workflow id was even looked at.
const stack = await startStack(t, { workers: 0 })
const token = await stack.adminToken()

const BODY_LIMIT = 1024 * 1024
const MAX_FORM_FIELDS = 1000
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

const workflowId = await stack.client.createWorkflow(token, { name: 'form sender', triggerType: 'WEBHOOK', nodes: [{ id: 'n1', type: 'set', config: { values: {} } }] })

async function postForm (id: string, body: string): Promise<{ status: string, runId?: string, slowestProbeMs: number }> {
  const answer = await sendWhileProbing(stack.baseUrl, `/api/automation/webhook/${id}`, { method: 'POST', headers: FORM, body })
  if (answer.status !== 200) throw new Error(`webhook answered ${answer.status}: ${answer.text}`)
  return { ...JSON.parse(answer.text), slowestProbeMs: answer.slowestProbeMs }
}

const triggerBodyOf = async (runId: string): Promise<any> => (await stack.client.getRun(token, runId)).triggerData.body

t.test('80 KB of `a&` to an unknown workflow: ignored, the event loop is not blocked', async (t) => {
  const answer = await postForm('x', 'a&'.repeat(40_000))
  t.equal(answer.status, 'ignored')
  t.ok(answer.slowestProbeMs < 2_000, `/health/live answered within ${Math.round(answer.slowestProbeMs)} ms`)
})

t.test('1 MiB of `a&` (the body limit): /health/live keeps answering, whatever the workflow id', async (t) => {
  const body = 'a&'.repeat(BODY_LIMIT / 2)
  t.equal(Buffer.byteLength(body), BODY_LIMIT)
  // A malformed id, and a well-formed one that names no workflow.
  for (const id of ['x', 'z'.repeat(24)]) {
    const answer = await postForm(id, body)
    t.equal(answer.status, 'ignored', `${id}: ignored`)
    t.ok(answer.slowestProbeMs < 2_000, `${id}: /health/live answered within ${Math.round(answer.slowestProbeMs)} ms`)
  }

  const received = await postForm(workflowId, body)
  t.equal(received.status, 'received', 'an active WEBHOOK workflow still receives it (always 200)')
  t.ok(received.slowestProbeMs < 2_000, `/health/live answered within ${Math.round(received.slowestProbeMs)} ms`)
  t.equal(await triggerBodyOf(received.runId!), body, `over ${MAX_FORM_FIELDS} fields the body is kept as text`)
})

t.test(`forms of up to ${MAX_FORM_FIELDS} fields are parsed; repeated fields become arrays`, async (t) => {
  const atTheBound = await postForm(workflowId, 'tag=x&'.repeat(MAX_FORM_FIELDS - 1) + 'tag=x')
  t.same(await triggerBodyOf(atTheBound.runId!), { tag: Array(MAX_FORM_FIELDS).fill('x') })

  const overTheBound = 'tag=x&'.repeat(MAX_FORM_FIELDS) + 'tag=x'
  t.equal(await triggerBodyOf((await postForm(workflowId, overTheBound)).runId!), overTheBound)
})

t.test('field names of Object.prototype are plain fields', async (t) => {
  const answer = await postForm(workflowId, 'toString=t&constructor=c&hasOwnProperty=h&__proto__=p&x=1&x=2')
  const body = await triggerBodyOf(answer.runId!)
  t.equal(body.toString, 't')
  t.equal(body.constructor, 'c')
  t.equal(body.hasOwnProperty, 'h')
  t.equal(Object.getOwnPropertyDescriptor(body, '__proto__')?.value, 'p')
  t.same(body.x, ['1', '2'])
})
