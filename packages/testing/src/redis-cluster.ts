import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import { makeCertificates } from './certificates.ts'
import { freePort } from './processes.ts'
import type { Teardown } from './teardown.ts'

const run = promisify(execFile)

class NodeExited extends Error {}

/** How long the cluster may take to start and agree on its slots. */
const START_TIMEOUT_MS = 20_000

/** Long enough that a busy test machine does not fail a live node. */
const NODE_TIMEOUT_MS = 5000

export interface RedisClusterNode {
  host: string
  port: number
  /** Cluster-bus port (nodes gossip there). */
  busPort: number
  process: ChildProcess
}

export interface LocalRedisCluster {
  nodes: RedisClusterNode[]
  /** REDIS_CLUSTER_NODES for these nodes: `127.0.0.1:p1,127.0.0.1:p2,…`. */
  nodeList: string
  /** REDIS_URL for these nodes: `redis+cluster://127.0.0.1:p1,…` (`rediss+cluster://:<password>@…` with TLS and a password). */
  url: string
  /** With `tls`: the PEM of the CA that signed the nodes' certificate. */
  ca?: string
  /** A plain connection to each node, for looking at what landed where (closed at teardown). */
  clients: Redis[]
  /** The node serving `key`'s slot, by index in `nodes`. */
  nodeOf: (key: string) => Promise<number>
}

/** Polls `check` until it resolves true; a rejection counts as not yet, except a NodeExited. */
async function waitUntil (what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS
  for (;;) {
    if (await check().catch((err: unknown) => { if (err instanceof NodeExited) throw err; return false })) return
    if (Date.now() > deadline) throw new Error(`Redis Cluster: timed out waiting for ${what}`)
    await sleep(100)
  }
}

export interface RedisClusterOptions {
  /** Masters (default 3). */
  size?: number
  /** Clients and the cluster bus speak TLS only, with a certificate for 127.0.0.1 signed by a CA of the test's own. */
  tls?: boolean
  /** Every node requires this password (`requirepass`). */
  password?: string
}

/**
 * A Redis Cluster of `size` masters (no replicas, no persistence) on free loopback ports,
 * each `redis-server --cluster-enabled yes` with its files in a temporary directory, joined
 * by `redis-cli --cluster create`. Resolves once every node reports `cluster_state:ok`;
 * every process is killed and the directory removed at teardown.
 */
export async function startRedisCluster (t: Teardown, { size = 3, tls = false, password }: RedisClusterOptions = {}): Promise<LocalRedisCluster> {
  for (const [tool, version] of [['redis-server', '--version'], ['redis-cli', '--version'], ...(tls ? [['openssl', 'version']] : [])]) {
    await run(tool, [version]).catch(() => {
      throw new Error(`Redis Cluster tests need ${tool} on PATH (apt-get install redis-server openssl, brew install redis openssl)`)
    })
  }
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-redis-cluster-'))
  const nodes: RedisClusterNode[] = []
  const clients: Redis[] = []
  t.teardown(async () => {
    for (const client of clients) client.disconnect()
    await Promise.all(nodes.map(async ({ process: child }) => {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGKILL')
      await once(child, 'exit')
    }))
    await rm(dir, { recursive: true, force: true })
  })

  const certificates = tls ? await makeCertificates(dir) : undefined
  const ca = certificates === undefined ? undefined : await readFile(certificates.ca, 'utf8')
  // freePort may hand out a port twice in a row: each node needs two of its own.
  const ports = new Set<number>()
  while (ports.size < size * 2) ports.add(await freePort())
  const [...free] = ports
  for (let i = 0; i < size; i++) {
    const port = free[2 * i]
    const busPort = free[2 * i + 1]
    const listen = certificates === undefined
      ? ['--port', String(port)]
      : ['--port', '0', '--tls-port', String(port), '--tls-cluster', 'yes', '--tls-auth-clients', 'no',
          '--tls-cert-file', certificates.cert, '--tls-key-file', certificates.key, '--tls-ca-cert-file', certificates.ca]
    const auth = password === undefined ? [] : ['--requirepass', password, '--masterauth', password]
    const child = spawn('redis-server', [
      ...listen,
      ...auth,
      '--cluster-port', String(busPort),
      '--bind', '127.0.0.1',
      '--cluster-enabled', 'yes',
      // A stopped node is declared failed after this; the default 15 s would slow fault tests.
      '--cluster-node-timeout', String(NODE_TIMEOUT_MS),
      '--cluster-config-file', `nodes-${port}.conf`,
      '--dir', dir,
      '--save', '',
      '--appendonly', 'no',
      '--daemonize', 'no',
      '--logfile', `redis-${port}.log`
    ], { stdio: 'ignore' })
    nodes.push({ host: '127.0.0.1', port, busPort, process: child })
    const client = new Redis({ host: '127.0.0.1', port, password, ...(ca !== undefined && { tls: { ca } }), lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 100 })
    // A test may stop a node: its client's reconnection errors are expected, and commands still fail.
    client.on('error', () => {})
    clients.push(client)
  }
  const addresses = nodes.map(({ host, port }) => `${host}:${port}`)
  await waitUntil('every node to answer', async () => {
    const exited = nodes.find(({ process: child }) => child.exitCode !== null)
    if (exited !== undefined) {
      const log = await readFile(join(dir, `redis-${exited.port}.log`), 'utf8').catch(() => '')
      throw new NodeExited(`Redis Cluster: redis-server on port ${exited.port} exited:\n${log}`)
    }
    await Promise.all(clients.map(async (client) => { await client.ping() }))
    return true
  })
  const cliOptions = [
    ...(certificates === undefined ? [] : ['--tls', '--cacert', certificates.ca]),
    ...(password === undefined ? [] : ['--no-auth-warning', '-a', password])
  ]
  await run('redis-cli', [...cliOptions, '--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'], { timeout: START_TIMEOUT_MS })
  await waitUntil('cluster_state:ok on every node', async () => {
    const states = await Promise.all(clients.map(async (client) => await client.cluster('INFO')))
    return states.every((info) => /^cluster_state:ok\s*$/m.test(info))
  })

  return {
    nodes,
    nodeList: addresses.join(','),
    url: `${tls ? 'rediss' : 'redis'}+cluster://${password === undefined ? '' : `:${encodeURIComponent(password)}@`}${addresses.join(',')}`,
    ca,
    clients,
    async nodeOf (key) {
      const slot = await clients[0].cluster('KEYSLOT', key)
      const range = (await clients[0].cluster('SLOTS')).find(([from, to]) => slot >= from && slot <= to)
      const master = range?.[2]
      if (master === undefined) throw new Error(`Redis Cluster: no node serves slot ${slot}`)
      return nodes.findIndex(({ port }) => port === master[1])
    }
  }
}
