/**
 * The bare durable pipeline's api (scenario A's yardstick): per request, insert a row, add a
 * BullMQ job carrying its id, answer 202. No framework, auth or validation: the least a
 * durable accept can do. Settings (database, Redis, prefix, pool size, port) come from the
 * same configuration as Switchboard's processes.
 */
import { createServer } from 'node:http'
import { Queue } from 'bullmq'
import { loadConfig } from '@switchboard/core/config'
import { createDatabase } from '@switchboard/core/db'
import { createProducerConnection } from '@switchboard/core/queues'
import { BARE_QUEUE } from './table.ts'

const config = loadConfig()
const { sql } = createDatabase(config.databaseUrl, { max: config.databasePoolMax })
const queue = new Queue(BARE_QUEUE, {
  connection: createProducerConnection(config.redisUrl),
  prefix: config.queuePrefix,
  defaultJobOptions: { removeOnComplete: true, removeOnFail: true }
})
await queue.waitUntilReady()

const server = createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200).end('ok')
    return
  }
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    const accept = async (): Promise<string> => {
      const payload = Buffer.concat(chunks).toString('utf8')
      const [row] = await sql<Array<{ id: string }>>`insert into bare_runs (payload) values (${payload}::jsonb) returning id`
      await queue.add('run', { id: row!.id })
      return row!.id
    }
    accept().then((runId) => {
      res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ runId }))
    }, (err: unknown) => {
      console.error(err)
      res.writeHead(500).end()
    })
  })
})
server.keepAliveTimeout = 72_000
server.listen(config.port, config.host)
