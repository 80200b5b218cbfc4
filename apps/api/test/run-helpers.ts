import { Redis } from 'ioredis'
import type { Config } from '@switchboard/core/config'
import { closeQueues, createQueues } from '@switchboard/core/queues'
import type { TestApp } from './helper.ts'

interface Teardown { teardown: (fn: () => unknown) => void }

/** No worker runs in inject tests: the jobs they enqueue are removed from Redis at the end. */
export function removeQueuedJobsAtTeardown (t: Teardown, config: Config): void {
  t.teardown(async () => {
    const connection = new Redis(config.redisUrl, { maxRetriesPerRequest: 1 })
    const queues = createQueues(connection, config.queuePrefix)
    try {
      await Promise.all(Object.values(queues).map(async (queue) => { await queue.obliterate({ force: true }) }))
    } finally {
      await closeQueues(queues)
      connection.disconnect()
    }
  })
}

export interface WorkflowInput {
  name?: string
  triggerType: string
  triggerConfig?: Record<string, unknown>
  isActive?: boolean
}

/** Creates a workflow through the API and returns its id. */
export async function createWorkflow (app: Pick<TestApp, 'request'>, token: string, input: WorkflowInput): Promise<string> {
  const res = await app.request({
    method: 'POST',
    url: '/api/automation/workflows',
    token,
    payload: { name: 'test workflow', isActive: true, nodes: [{ id: 'n1', type: 'set', config: { values: { a: '1' } } }], ...input }
  })
  if (res.statusCode !== 201) throw new Error(`workflow creation failed: ${res.body}`)
  return res.json().id
}
