import { once } from 'node:events'
import t, { type Test } from 'tap'
import { Worker } from 'bullmq'
import { startRedisCluster } from '@switchboard/testing/redis-cluster'
import { uniqueQueuePrefix } from '@switchboard/testing/database'
import { closeQueues, createProducerConnection, createQueues, createWorkerConnection, queueKeyPrefix, redisAnswers, WORKFLOW_RUNS } from '../src/queues/index.ts'

// A cluster as managed services run it: TLS on every node and a password, given by a rediss+cluster:// URL.
const cluster = await startRedisCluster(t, { tls: true, password: 'cluster p@ss' })
// The test's own CA; a deployment trusts its provider's CA through NODE_EXTRA_CA_CERTS or the system store.
const trustTestCa = { tls: { ca: cluster.ca } }

/** A job added and run through the cluster under `prefix`; answers the key its job is stored under. */
async function runOneJob (t: Test, prefix: string, jobId: string): Promise<string> {
  const producer = createProducerConnection(cluster.url, trustTestCa)
  const connection = createWorkerConnection(cluster.url, trustTestCa)
  const queues = createQueues(producer, prefix)
  const worker = new Worker(WORKFLOW_RUNS, async (job) => `ran ${String(job.data.runId)}`, { connection, prefix: queueKeyPrefix(prefix, WORKFLOW_RUNS, connection) })
  t.teardown(async () => {
    await worker.close()
    await closeQueues(queues)
    producer.disconnect()
    connection.disconnect()
  })
  const completed = once(worker, 'completed')

  await once(producer, 'ready')
  await t.resolves(redisAnswers(producer), 'the cluster answers and serves every slot')
  await queues[WORKFLOW_RUNS].add('run', { runId: jobId }, { jobId })
  const [job, result] = await completed
  t.same([job.id, result], [jobId, `ran ${jobId}`])
  return `${prefix}:{${WORKFLOW_RUNS}}:${WORKFLOW_RUNS}:${jobId}`
}

t.test('producer and worker connections reach a TLS cluster with its password and run a job', async (t) => {
  t.match(cluster.url, /^rediss\+cluster:\/\/:cluster%20p%40ss@127\.0\.0\.1:\d+,/)
  const key = await runOneJob(t, uniqueQueuePrefix(), 'tls-run')
  t.equal(await cluster.clients[await cluster.nodeOf(key)].exists(key), 1, 'the job is stored under its queue\'s hash tag')
})

t.test('a prefix with a hash tag of its own: the queue\'s keys, after it, share its slot and run jobs', async (t) => {
  const prefix = `{${uniqueQueuePrefix()}}`
  const key = await runOneJob(t, prefix, 'tagged-run')
  t.equal(await cluster.nodeOf(key), await cluster.nodeOf(`${prefix}:anything`), 'hashed by the prefix\'s tag')
  t.equal(await cluster.clients[await cluster.nodeOf(key)].exists(key), 1)
})

t.test('without the CA the cluster is never reached: certificates are verified', async (t) => {
  const untrusted = createProducerConnection(cluster.url)
  t.teardown(() => { untrusted.disconnect() })
  // ioredis reports the refused handshake as a closed connection on every node.
  const [err] = await once(untrusted, 'error') as [Error]
  t.equal(err.message, 'Failed to refresh slots cache.')
  t.not(untrusted.status, 'ready')
  await t.rejects(redisAnswers(untrusted), 'and nothing is answered')
})
