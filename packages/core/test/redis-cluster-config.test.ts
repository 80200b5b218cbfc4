import t from 'tap'
import { Cluster, Redis } from 'ioredis'
import { loadConfig } from '../src/config.ts'
import { queueKeyPrefix } from '../src/queues/connections.ts'
import { parseClusterUrl } from '../src/queues/redis-url.ts'

// Secrets given, so that no development secrets file is written.
const base = { JWT_SECRET: 'a-test-secret-long-enough-0123456789', ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') }

t.test('REDIS_CLUSTER_NODES becomes a redis+cluster URL', async (t) => {
  const config = loadConfig({ ...base, REDIS_CLUSTER_NODES: ' 10.0.0.1:7000 , redis-b.internal:7001,[::1]:7002 ' })
  t.equal(config.redisUrl, 'redis+cluster://10.0.0.1:7000,redis-b.internal:7001,[::1]:7002')
  t.same(parseClusterUrl(config.redisUrl), {
    nodes: [{ host: '10.0.0.1', port: 7000 }, { host: 'redis-b.internal', port: 7001 }, { host: '::1', port: 7002 }],
    username: undefined,
    password: undefined,
    tls: false
  })
  t.equal(config.queuePrefix, 'switchboard', 'the prefix as configured: each queue adds its own hash tag')
})

t.test('a redis+cluster URL in REDIS_URL, with credentials and TLS', async (t) => {
  const plain = loadConfig({ ...base, REDIS_URL: 'redis+cluster://127.0.0.1:7000,127.0.0.1:7001' })
  t.equal(plain.redisUrl, 'redis+cluster://127.0.0.1:7000,127.0.0.1:7001')
  t.same(parseClusterUrl(plain.redisUrl).nodes, [{ host: '127.0.0.1', port: 7000 }, { host: '127.0.0.1', port: 7001 }])

  const secured = loadConfig({ ...base, REDIS_URL: 'rediss+cluster://app:p%40ss%3Aword@cache.example.com:6379/' })
  t.same(parseClusterUrl(secured.redisUrl), {
    nodes: [{ host: 'cache.example.com', port: 6379 }],
    username: 'app',
    password: 'p@ss:word',
    tls: true
  }, 'credentials are URL-decoded; rediss+cluster means TLS')
  t.same(parseClusterUrl('redis+cluster://:secret@h:1'), { nodes: [{ host: 'h', port: 1 }], username: undefined, password: 'secret', tls: false }, 'a password without a user')
  t.equal(loadConfig({ ...base, REDIS_URL: 'redis://cache:6380' }).redisUrl, 'redis://cache:6380', 'one Redis as before')
})

t.test('bad cluster addresses are refused with the setting and the fault named', async (t) => {
  const tooMany = Array.from({ length: 65 }, (_, i) => `10.0.0.${i}:7000`).join(',')
  const cases: Array<[Record<string, string>, string]> = [
    [{ REDIS_CLUSTER_NODES: '10.0.0.1' }, 'REDIS_CLUSTER_NODES must be a comma-separated list of host:port: node "10.0.0.1" must be host:port with a port from 1 to 65535'],
    [{ REDIS_CLUSTER_NODES: '10.0.0.1:7000,,10.0.0.2:7000' }, 'REDIS_CLUSTER_NODES must be a comma-separated list of host:port: node "" must be host:port with a port from 1 to 65535'],
    [{ REDIS_CLUSTER_NODES: 'a:0' }, 'REDIS_CLUSTER_NODES must be a comma-separated list of host:port: node "a:0" must be host:port with a port from 1 to 65535'],
    [{ REDIS_CLUSTER_NODES: 'a:65536' }, 'REDIS_CLUSTER_NODES must be a comma-separated list of host:port: node "a:65536" must be host:port with a port from 1 to 65535'],
    [{ REDIS_CLUSTER_NODES: 'bad_host!:7000' }, 'REDIS_CLUSTER_NODES must be a comma-separated list of host:port: node "bad_host!:7000" has an invalid host'],
    [{ REDIS_CLUSTER_NODES: '[::zz]:7000' }, 'REDIS_CLUSTER_NODES must be a comma-separated list of host:port: node "[::zz]:7000" has an invalid IPv6 address'],
    [{ REDIS_CLUSTER_NODES: 'redis://a:7000' }, 'REDIS_CLUSTER_NODES must be a comma-separated list of host:port: node "redis://a:7000" must be host:port with a port from 1 to 65535'],
    [{ REDIS_CLUSTER_NODES: tooMany }, 'REDIS_CLUSTER_NODES must be a comma-separated list of host:port: lists 65 nodes; at most 64'],
    [{ REDIS_CLUSTER_NODES: 'a:7000', REDIS_URL: 'redis://b:6379' }, 'REDIS_URL and REDIS_CLUSTER_NODES are both set: set one (a cluster may also be given as REDIS_URL=redis+cluster://host:port,host:port)'],
    [{ REDIS_URL: 'redis+cluster://' }, 'REDIS_URL names no node (redis+cluster://[user:password@]host:port,host:port)'],
    [{ REDIS_URL: 'redis+cluster://a:7000/1' }, 'REDIS_URL must end after its nodes (a cluster has no database number or options) (redis+cluster://[user:password@]host:port,host:port)'],
    [{ REDIS_URL: 'redis+cluster://a:7000?tls=true' }, 'REDIS_URL must end after its nodes (a cluster has no database number or options) (redis+cluster://[user:password@]host:port,host:port)'],
    [{ REDIS_URL: 'redis+cluster://a' }, 'REDIS_URL node "a" must be host:port with a port from 1 to 65535 (redis+cluster://[user:password@]host:port,host:port)'],
    [{ REDIS_URL: 'redis+cluster://u:%zz@a:7000' }, 'REDIS_URL has credentials that are not URL-encoded (redis+cluster://[user:password@]host:port,host:port)'],
    [{ REDIS_URL: 'cluster://a:7000' }, 'REDIS_URL must use redis:, rediss:, redis+cluster: or rediss+cluster:'],
    [{ REDIS_URL: 'redis+cluster://a:7000', QUEUE_PREFIX: '{}switchboard' }, 'QUEUE_PREFIX must not start a hash tag with "{}" on a Redis Cluster, got "{}switchboard"']
  ]
  for (const [env, message] of cases) {
    t.throws(() => loadConfig({ ...base, ...env }), { name: 'ConfigError', message }, JSON.stringify(env).slice(0, 120))
  }
  t.equal(loadConfig({ ...base, QUEUE_PREFIX: '{}switchboard' }).queuePrefix, '{}switchboard', 'one Redis hashes nothing: any prefix is fine')
  t.equal(loadConfig({ ...base, REDIS_CLUSTER_NODES: '' }).redisUrl, 'redis://127.0.0.1:6379', 'an empty REDIS_CLUSTER_NODES is unset')
})

t.test('on a cluster each queue gets its own hash tag, after a prefix\'s own', async (t) => {
  const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true })
  const single = new Redis({ lazyConnect: true })
  t.teardown(() => { cluster.disconnect(); single.disconnect() })
  t.equal(queueKeyPrefix('switchboard', 'workflow-runs', cluster), 'switchboard:{workflow-runs}')
  t.equal(queueKeyPrefix('switchboard', 'scheduled-tasks', cluster), 'switchboard:{scheduled-tasks}')
  t.equal(queueKeyPrefix('{switchboard}', 'workflow-runs', cluster), '{switchboard}:{workflow-runs}', 'a tagged prefix comes first: Redis hashes every queue by it')
  t.equal(queueKeyPrefix('app:{eu}:switchboard', 'workflow-runs', cluster), 'app:{eu}:switchboard:{workflow-runs}')
  t.equal(queueKeyPrefix('half{open', 'workflow-runs', cluster), 'half{open:{workflow-runs}', 'an unclosed brace: the queue tag closes it, still one slot per queue')
  t.equal(queueKeyPrefix('switchboard', 'workflow-runs', single), 'switchboard', 'one Redis: the prefix as is')
})
