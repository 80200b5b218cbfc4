import { Worker } from 'bullmq'
import { createLogger } from '@switchboard/core/logger'
import { createWorkerConnection, type QueueName, type QueueProcessor } from '@switchboard/core/queues'
import { testConfig } from '@switchboard/testing/config'
import { createCoreTestContext } from '@switchboard/testing/context'
import { REDIS_URL } from '@switchboard/testing/database'
import type { Teardown } from '@switchboard/testing/teardown'
import { createWorkerContext, type WorkerContext } from '../src/context.ts'

/**
 * The worker's context for one test file, as startWorker builds it, on the file's own database
 * and queue prefix (createCoreTestContext) with a test config and `env` over it; closed at teardown.
 */
export async function createWorkerTestContext (t: Teardown, env: Record<string, string> = {}): Promise<WorkerContext> {
  const { databaseUrl, database, queues, queuePrefix, redis } = await createCoreTestContext(t)
  const config = testConfig(databaseUrl, queuePrefix, env)
  const { context, close } = createWorkerContext({ config, logger: createLogger('silent', 'worker-test'), database, queues, redis })
  t.teardown(close)
  return context
}

/** A job of queue `Q`, as its processor is given it. */
type QueueJob<Q extends QueueName> = Parameters<QueueProcessor<Q>>[0]

/** The lock token of the jobs `takeJob` takes: what a processor passes to `moveToDelayed`. */
export const TOKEN = 'worker-test'

/**
 * Takes the next waiting job of `name`, active and locked under TOKEN as a Worker of the
 * file's prefix would take it, for a test to give its processor by hand.
 */
export async function takeJob<Q extends QueueName> (t: Teardown, context: WorkerContext, name: Q): Promise<QueueJob<Q>> {
  const connection = createWorkerConnection(REDIS_URL)
  const worker = new Worker(name, null, { connection, prefix: context.queues[name].opts.prefix, autorun: false })
  t.teardown(async () => {
    await worker.close()
    connection.disconnect()
  })
  const job = await worker.getNextJob(TOKEN)
  if (job === undefined) throw new Error(`no job waiting on ${name}`)
  return job as QueueJob<Q>
}
