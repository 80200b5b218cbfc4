import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { createLogger } from '../src/logger.ts'
import { WORKFLOW_RUNS } from '../src/queues/catalog.ts'
import { paceStarts } from '../src/runs/start-pace.ts'

const { queues } = await createCoreTestContext(t)
const logger = createLogger('silent', 'start-pace-test')
await queues[WORKFLOW_RUNS].waitUntilReady()
const MINUTE_MS = 60_000

t.test('starts beyond an owner\'s minute wait for the next minutes with room, in order; batches share the minutes; owners do not', async (t) => {
  // The places are by clock minute: the calls are kept within one.
  if (Date.now() % MINUTE_MS > MINUTE_MS - 2000) await new Promise((resolve) => setTimeout(resolve, 2500))
  const before = Date.now()
  const first = await paceStarts(queues[WORKFLOW_RUNS], logger, 'owner-a', 12, 5)
  const second = await paceStarts(queues[WORKFLOW_RUNS], logger, 'owner-a', 4, 5)
  const other = await paceStarts(queues[WORKFLOW_RUNS], logger, 'owner-b', 5, 5)
  /** 0 for a start now, else which minute after the calls' a delay ends at the start of (each call's own time is within a few ms of `before`). */
  const ahead = (delayMs: number): number => delayMs === 0 ? 0 : Math.round((before + delayMs - Math.floor(before / MINUTE_MS) * MINUTE_MS) / MINUTE_MS)
  t.same(first.map(ahead), [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2], 'five now, five next minute, two the one after')
  t.same(second.map((delay) => ahead(delay)), [2, 2, 2, 3], 'a later batch takes the places left')
  t.same(other, [0, 0, 0, 0, 0], 'another owner has a minute of their own')
})
