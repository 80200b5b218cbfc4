import { eq } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { createTestEngine } from '@switchboard/testing/engine'
import { runs, users, workflows, type WorkflowNode } from '../src/db/schema/index.ts'
import { WORKFLOW_RUNS } from '../src/queues/catalog.ts'
import { fairShareOn, noteOwners } from '../src/queues/fair-share.ts'
import { createRunAdmission } from '../src/runs/admission.ts'
import { effectiveQuotas, type Quotas } from '../src/users/quotas.ts'

const { db, queues } = await createCoreTestContext(t)
const defaults: Quotas = { runsPerMinute: 1000, runsInFlight: 0, waitingRuns: 2, workflows: 10, credentials: 10, cronWorkflows: 10, eventListeners: 10, knowledgeSources: 10 }

const [owner] = await db.insert(users).values({ email: 'owner@example.com', passwordHash: 'x' }).returning()
const [other] = await db.insert(users).values({ email: 'other@example.com', passwordHash: 'x' }).returning()

t.test('effective quotas: a user\'s own settings over the defaults, anything else ignored', async (t) => {
  t.same(effectiveQuotas(defaults, { workflows: 3, credentials: -1, waitingRuns: 'many', seats: 4 }), { ...defaults, workflows: 3 })
  t.same(effectiveQuotas(defaults, null), defaults)
})

t.test('a wait node beyond the owner\'s waiting runs fails its run, and the runs before it wait', async (t) => {
  const engine = createTestEngine(t, { db, queues, quotas: defaults })
  const nodes: WorkflowNode[] = [{ id: 'pause', type: 'wait', config: { hours: 1 } }]
  const [workflow] = await db.insert(workflows).values({ userId: owner!.id, name: 'waits', triggerType: 'MANUAL', isActive: true, nodes }).returning()
  const run = async (): Promise<string> => (await db.insert(runs).values({ workflowId: workflow!.id, userId: owner!.id, queue: WORKFLOW_RUNS, workflowVersion: 1, triggerData: {} }).returning())[0]!.id
  const outcomes = [await engine.executeRun(await run()), await engine.executeRun(await run())]
  t.same(outcomes, ['WAITING', 'WAITING'], 'two runs wait: the quota')
  const third = await run()
  t.equal(await engine.executeRun(third), 'FAILED')
  t.equal((await db.select().from(runs).where(eq(runs.id, third)))[0]!.error, 'Too many waiting runs (max 2): this run cannot wait')
  await db.update(users).set({ quotas: { waitingRuns: 3 } }).where(eq(users.id, owner!.id))
  t.equal(await engine.executeRun(await run()), 'WAITING', 'an admin\'s higher quota lets one more wait')
})

t.test('fair share: beyond its share of the slots a user\'s job is held while other users use the queue, and taken when none do', async (t) => {
  let othersWait = true
  const woken: string[] = []
  const admission = createRunAdmission({ db, concurrency: 4, share: 0.5, quotas: defaults, othersActive: async () => othersWait, wake: async (jobId) => { woken.push(jobId) } })
  const first = await admission.admit(owner!.id, 'job-1', 'run-1')
  const second = await admission.admit(owner!.id, 'job-2', 'run-2')
  t.ok(first.admitted && second.admitted, 'up to its share (2 of 4 slots)')
  const third = await admission.admit(owner!.id, 'job-3', 'run-3')
  t.match(third, { admitted: false, retryInMs: Number }, 'held while others use the queue')
  t.ok((await admission.admit(other!.id, 'job-other', 'run-other')).admitted, 'another user is admitted meanwhile')
  if (first.admitted) await first.release(false)
  t.same(woken, ['job-3'], 'a run of the user ending here wakes its held job')
  othersWait = false
  // The answer about others is trusted a moment.
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.ok((await admission.admit(owner!.id, 'job-3', 'run-3')).admitted)
  t.ok((await admission.admit(owner!.id, 'job-4', 'run-4')).admitted, 'past its share when it is alone on the queue: no slot idles')
})

t.test('in-flight quota: a user with runsInFlight set is held at that many RUNNING runs, across workers', async (t) => {
  await db.update(users).set({ quotas: { runsInFlight: 1 } }).where(eq(users.id, other!.id))
  const [workflow] = await db.insert(workflows).values({ userId: other!.id, name: 'busy', triggerType: 'MANUAL', isActive: true, nodes: [] }).returning()
  await db.insert(runs).values({ workflowId: workflow!.id, userId: other!.id, queue: WORKFLOW_RUNS, workflowVersion: 1, status: 'RUNNING' })
  // Another worker's process: nothing of this user runs here.
  const admission = createRunAdmission({ db, concurrency: 50, share: 0.5, quotas: defaults, othersActive: async () => false, wake: async () => {} })
  t.match(await admission.admit(other!.id, 'job-5', 'run-5'), { admitted: false })
  t.ok((await admission.admit(owner!.id, 'job-6', 'run-6')).admitted, 'a user without one is not counted')
})

t.test('in-flight quota: runs admitted and not claimed yet count, and two workers admitting at once never pass it', async (t) => {
  const [user] = await db.insert(users).values({ email: 'bursty@example.com', passwordHash: 'x', quotas: { runsInFlight: 2 } }).returning()
  const [workflow] = await db.insert(workflows).values({ userId: user!.id, name: 'burst', triggerType: 'MANUAL', isActive: true, nodes: [] }).returning()
  const pending = await db.insert(runs).values(Array.from({ length: 6 }, () => ({ workflowId: workflow!.id, userId: user!.id, queue: WORKFLOW_RUNS, workflowVersion: 1 }))).returning()
  const worker = () => createRunAdmission({ db, concurrency: 50, share: 0.5, quotas: defaults, othersActive: async () => false, wake: async () => {} })
  const workers = [worker(), worker()]
  // Every job reaches a worker at once, none of them RUNNING yet.
  const answers = await Promise.all(pending.map(async (run, n) => await workers[n % 2]!.admit(user!.id, `job-${run.id}`, run.id)))
  const admitted = pending.filter((_run, n) => answers[n]!.admitted)
  t.equal(admitted.length, 2, 'as many admitted as the quota, across both workers')

  // One admitted run is claimed: it counts as RUNNING instead of by its admission.
  await db.update(runs).set({ status: 'RUNNING', claim: 1 }).where(eq(runs.id, admitted[0]!.id))
  const next = pending.find((run) => !admitted.includes(run))!
  t.match(await workers[0]!.admit(user!.id, `job-${next.id}`, next.id), { admitted: false })
  // The other's job is done with it, the run still PENDING (held for its workflow's slot): its reservation is given back.
  const slotHeld = answers[pending.indexOf(admitted[1]!)]!
  if (slotHeld.admitted) await slotHeld.release(false)
  const nextAnswer = await workers[1]!.admit(user!.id, `job-${next.id}`, next.id)
  t.ok(nextAnswer.admitted, 'the reservation given back admits the next run')
  // Its job fails on a store error and will be retried without an admission: the reservation stays.
  if (nextAnswer.admitted) await nextAnswer.release(true)
  // The RUNNING one ends: its place frees without a release.
  await db.update(runs).set({ status: 'SUCCESS' }).where(eq(runs.id, admitted[0]!.id))
  const last = pending.filter((run) => !admitted.includes(run) && run !== next)
  t.same((await Promise.all(last.map(async (run) => await workers[0]!.admit(user!.id, `job-${run.id}`, run.id)))).map((answer) => answer.admitted).sort(), [false, false, true],
    'one more once it ended')
})

t.test('others active: another user queued runs on the queue lately', async (t) => {
  const queue = queues[WORKFLOW_RUNS]
  const { othersActive } = fairShareOn(queue)
  t.equal(await othersActive(owner!.id), false, 'nobody queued')
  await noteOwners(queue, [owner!.id])
  t.equal(await othersActive(owner!.id), false, 'only the user itself')
  await noteOwners(queue, [other!.id])
  t.equal(await othersActive(owner!.id), true)
})
