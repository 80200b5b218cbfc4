import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { ConfigError, loadConfig } from '../src/config.ts'

const dataDir = (): string => mkdtempSync(join(tmpdir(), 'switchboard-config-'))
const key = Buffer.alloc(32, 7).toString('base64')
const production = {
  NODE_ENV: 'production',
  JWT_SECRET: 'x'.repeat(32),
  ENCRYPTION_KEY: key,
  ADMIN_PASSWORD: 'a-real-password',
  CHAT_APP_SECRET: 'the-platform-app-secret'
}

t.test('defaults follow the README\'s configuration table', async (t) => {
  const config = loadConfig({ DATA_DIR: dataDir() })
  t.equal(config.port, 3000)
  t.equal(config.host, '0.0.0.0')
  t.equal(config.databaseUrl, 'postgres://postgres@127.0.0.1:5432/switchboard')
  t.equal(config.redisUrl, 'redis://127.0.0.1:6379')
  t.equal(config.queuePrefix, 'switchboard')
  t.equal(config.adminEmail, 'admin@example.com')
  t.equal(config.adminPassword, 'admin')
  t.equal(config.chat.apiUrl, 'https://graph.facebook.com/v21.0')
  t.equal(config.workerConcurrency, 50)
  t.equal(config.httpRequestAllowPrivate, false)
  t.equal(config.trustProxy, false, 'no proxy is trusted unless named')
  t.equal(config.apiMetricsPort, 3002)
  t.equal(config.logLevel, 'info')
  t.equal(config.encryptionKey.length, 32)
  t.ok(config.jwtSecret.length >= 32)
})

t.test('development secrets are generated once per data dir and then reused', async (t) => {
  const dir = dataDir()
  const first = loadConfig({ DATA_DIR: dir })
  const second = loadConfig({ DATA_DIR: dir })
  t.equal(second.jwtSecret, first.jwtSecret)
  t.same(second.encryptionKey, first.encryptionKey)
  t.not(loadConfig({ DATA_DIR: dataDir() }).jwtSecret, first.jwtSecret)
})

t.test('production refuses unsafe defaults', async (t) => {
  t.ok(loadConfig(production), 'a complete production environment loads')
  t.throws(() => loadConfig({ ...production, JWT_SECRET: undefined }), { name: 'ConfigError', message: 'JWT_SECRET of at least 32 characters is required when NODE_ENV=production' })
  t.throws(() => loadConfig({ ...production, JWT_SECRET: 'short-secret' }), /JWT_SECRET of at least 32 characters/)
  t.throws(() => loadConfig({ ...production, ENCRYPTION_KEY: undefined }), /ENCRYPTION_KEY is required/)
  t.throws(() => loadConfig({ ...production, ADMIN_PASSWORD: undefined }), /ADMIN_PASSWORD must be changed/)
  t.throws(() => loadConfig({ ...production, ADMIN_PASSWORD: 'admin' }), /ADMIN_PASSWORD must be changed/)
  for (const missing of [undefined, '', '   ']) {
    t.throws(() => loadConfig({ ...production, CHAT_APP_SECRET: missing }),
      { name: 'ConfigError', message: 'CHAT_APP_SECRET is required when NODE_ENV=production (inbound chat deliveries must be signed)' }, `CHAT_APP_SECRET ${JSON.stringify(missing)}`)
  }
  t.equal(loadConfig(production).chat.appSecret, 'the-platform-app-secret')
  t.equal(loadConfig({ DATA_DIR: dataDir() }).chat.appSecret, undefined, 'outside production deliveries may be unsigned')
})

t.test('every bad or missing setting is reported at once, the first problem of each', async (t) => {
  const err = t.throws(() => loadConfig({ NODE_ENV: 'production', PORT: 'eighty', API_METRICS_PORT: '-1', JWT_SECRET: 'short', LOG_LEVEL: 'loud' })) as ConfigError
  t.type(err, ConfigError)
  t.same(err.problems.map((problem) => problem.setting), ['JWT_SECRET', 'ENCRYPTION_KEY', 'ADMIN_PASSWORD', 'CHAT_APP_SECRET', 'LOG_LEVEL', 'PORT', 'API_METRICS_PORT'])
  t.equal(err.problems[0]?.message, 'JWT_SECRET of at least 32 characters is required when NODE_ENV=production', 'one problem per setting')
  t.equal(err.message, err.problems.map((problem) => problem.message).join('; '))
})

t.test('malformed values are refused with the setting named', async (t) => {
  const base = { DATA_DIR: dataDir() }
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'eighty' }, /^PORT must be an integer/],
    [{ PORT: '70000' }, /^PORT must be an integer from 0 to 65535/],
    [{ WORKER_CONCURRENCY: '0' }, /^WORKER_CONCURRENCY must be an integer/],
    [{ DATABASE_URL: 'not a url' }, /^DATABASE_URL must be a URL/],
    [{ DATABASE_URL: 'mysql://localhost/x' }, /^DATABASE_URL must use postgres:/],
    [{ REDIS_URL: 'http://localhost' }, /^REDIS_URL must use redis:/],
    [{ CHAT_API_URL: 'ftp://example.com' }, /^CHAT_API_URL must use http:/],
    [{ ENCRYPTION_KEY: Buffer.alloc(16).toString('base64') }, /^ENCRYPTION_KEY must be 32 bytes/],
    [{ HTTP_REQUEST_ALLOW_PRIVATE: 'maybe' }, /^HTTP_REQUEST_ALLOW_PRIVATE must be true or false/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of/],
    [{ TRUST_PROXY: 'yes' }, /^TRUST_PROXY must be true, false or a comma-separated list/],
    [{ API_METRICS_PORT: 'ninety' }, /^API_METRICS_PORT must be an integer from 0 to 65535/],
    [{ API_METRICS_PORT: '8080', PORT: '8080' }, /^API_METRICS_PORT must differ from PORT \(both 8080\)/],
    [{ ADMIN_EMAIL: 'nobody' }, /^ADMIN_EMAIL must be an email address/]
  ]
  for (const [env, message] of cases) {
    t.throws(() => loadConfig({ ...base, ...env }), message, JSON.stringify(env))
  }
})

t.test('values are parsed and normalised', async (t) => {
  const config = loadConfig({
    DATA_DIR: dataDir(),
    PORT: '8080',
    ADMIN_EMAIL: 'Boss@Example.COM',
    HTTP_REQUEST_ALLOW_PRIVATE: 'true',
    CHAT_API_URL: 'http://127.0.0.1:9999/v21.0/',
    CHAT_ACCESS_TOKEN: ' token ',
    WORKER_CONCURRENCY: '5'
  })
  t.equal(config.port, 8080)
  t.equal(config.adminEmail, 'boss@example.com')
  t.equal(config.httpRequestAllowPrivate, true)
  t.equal(config.chat.apiUrl, 'http://127.0.0.1:9999/v21.0')
  t.equal(config.chat.accessToken, 'token')
  t.equal(config.workerConcurrency, 5)
})

t.test('TRUST_PROXY: true, false, or addresses and ranges as Fastify\'s trustProxy reads them', async (t) => {
  const trustProxy = (value: string): unknown => loadConfig({ DATA_DIR: dataDir(), TRUST_PROXY: value }).trustProxy
  t.equal(trustProxy('true'), true)
  t.equal(trustProxy('FALSE'), false)
  t.same(trustProxy(' 203.0.113.7 , 10.0.0.0/8,2001:db8::/32, loopback,192.168.0.0/255.255.0.0,::1'),
    ['203.0.113.7', '10.0.0.0/8', '2001:db8::/32', 'loopback', '192.168.0.0/255.255.0.0', '::1'])
  // A hop count, a malformed address, a prefix out of range, a broken netmask or an empty entry names the entry.
  for (const entry of ['1', '10.0.0', '10.0.0.0/33', '10.0.0.0/0', '2001:db8::/129', '10.0.0.0/255.0.255.0', '10.0.0.0/8/8', 'localhost', '']) {
    t.throws(() => trustProxy(`loopback,${entry}`), { name: 'ConfigError', message: `TRUST_PROXY must be true, false or a comma-separated list of addresses, CIDR ranges, loopback, linklocal and uniquelocal, got "${entry}"` }, entry)
  }
})

t.test('NODE_OUTPUT_MAX_BYTES and RUN_RESULT_MAX_BYTES: 1 MiB and 8 MiB unless set, the result never below a node', async (t) => {
  const load = (env: Record<string, string> = {}) => loadConfig({ DATA_DIR: dataDir(), ...env })
  t.match(load(), { nodeOutputMaxBytes: 1_048_576, runResultMaxBytes: 8_388_608 })
  t.match(load({ NODE_OUTPUT_MAX_BYTES: '65536', RUN_RESULT_MAX_BYTES: '65536' }), { nodeOutputMaxBytes: 65_536, runResultMaxBytes: 65_536 })
  t.throws(() => load({ NODE_OUTPUT_MAX_BYTES: '100' }), { name: 'ConfigError', message: 'NODE_OUTPUT_MAX_BYTES must be an integer from 1024 to 67108864, got "100"' })
  t.throws(() => load({ RUN_RESULT_MAX_BYTES: '1GB' }), /^RUN_RESULT_MAX_BYTES must be an integer from 1024 to 134217728/)
  t.throws(() => load({ RUN_RESULT_MAX_BYTES: '524288' }), { name: 'ConfigError', message: 'RUN_RESULT_MAX_BYTES (524288) must be at least NODE_OUTPUT_MAX_BYTES (1048576)' })
})

t.test('production refuses the placeholder secrets of examples', async (t) => {
  t.throws(() => loadConfig({ ...production, JWT_SECRET: 'change-me-to-a-long-random-secret-of-32-chars' }), { name: 'ConfigError', message: 'JWT_SECRET is a placeholder: generate one, e.g. openssl rand -base64 48' })
  t.throws(() => loadConfig({ ...production, ENCRYPTION_KEY: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' }), { name: 'ConfigError', message: 'ENCRYPTION_KEY is a placeholder (all zero): generate one, e.g. openssl rand -base64 32' })
  t.throws(() => loadConfig({ ...production, ADMIN_PASSWORD: 'change-me' }), { name: 'ConfigError', message: 'ADMIN_PASSWORD is a placeholder: choose a real password when NODE_ENV=production' })
  // Development keeps accepting them: only production is refused.
  t.doesNotThrow(() => loadConfig({ ...production, NODE_ENV: 'development', JWT_SECRET: 'change-me-to-a-long-random-secret-of-32-chars', ENCRYPTION_KEY: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' }))
})

t.test('deployment settings: pool size, the worker queues and listener, the default local ports', async (t) => {
  const defaults = loadConfig({ DATA_DIR: dataDir() })
  t.equal(defaults.databasePoolMax, 10)
  t.same(defaults.workerQueues, ['workflow-runs', 'scheduled-tasks', 'agent-execution', 'assistant-main', 'chat-broadcasts', 'event-deliveries', 'knowledge-index'])
  t.equal(defaults.workerHttpPort, 3001)
  t.equal(defaults.localPostgresPort, 5432)
  t.equal(defaults.localRedisPort, 6379)

  const set = loadConfig({ DATA_DIR: dataDir(), DATABASE_POOL_MAX: '25', WORKER_QUEUES: ' assistant-main , agent-execution,agent-execution', WORKER_HTTP_PORT: '9464', LOCAL_POSTGRES_PORT: '55432', LOCAL_REDIS_PORT: '56379' })
  t.equal(set.databasePoolMax, 25)
  t.same(set.workerQueues, ['agent-execution', 'assistant-main'], 'in queue order, each once')
  t.equal(set.workerHttpPort, 9464)
  t.equal(set.databaseUrl, 'postgres://postgres@127.0.0.1:55432/switchboard', 'the default database address follows LOCAL_POSTGRES_PORT')
  t.equal(set.redisUrl, 'redis://127.0.0.1:56379', 'the default Redis address follows LOCAL_REDIS_PORT')
  t.equal(loadConfig({ DATA_DIR: dataDir(), LOCAL_POSTGRES_PORT: '55432', DATABASE_URL: 'postgres://db:5432/x' }).databaseUrl, 'postgres://db:5432/x', 'DATABASE_URL wins')

  t.throws(() => loadConfig({ DATA_DIR: dataDir(), DATABASE_POOL_MAX: '0' }), { name: 'ConfigError', message: 'DATABASE_POOL_MAX must be an integer from 1 to 1000, got "0"' })
  t.throws(() => loadConfig({ DATA_DIR: dataDir(), WORKER_QUEUES: 'workflow-runs,' }), /WORKER_QUEUES must be a comma-separated list of workflow-runs, scheduled-tasks, agent-execution, assistant-main, chat-broadcasts, event-deliveries, knowledge-index, got ""/)
  t.throws(() => loadConfig({ DATA_DIR: dataDir(), LOCAL_REDIS_PORT: '70000' }), /LOCAL_REDIS_PORT must be an integer from 1 to 65535/)
})

t.test('a transaction-mode pooler: DATABASE_POOL_MODE, and DATABASE_LISTEN_URL for a process that LISTENs', async (t) => {
  const load = (env: Record<string, string> = {}, options?: { listens: boolean }) => loadConfig({ DATA_DIR: dataDir(), ...env }, options)
  t.match(load(), { databasePoolMode: 'session', databaseListenUrl: undefined }, 'direct by default, LISTENs on DATABASE_URL')
  const pooled = { DATABASE_URL: 'postgres://switchboard_api:pw@pgbouncer:5432/switchboard', DATABASE_POOL_MODE: 'transaction', DATABASE_LISTEN_URL: 'postgres://switchboard_api:pw@postgres:5432/switchboard' }
  t.match(load(pooled, { listens: true }), { databasePoolMode: 'transaction', databaseListenUrl: pooled.DATABASE_LISTEN_URL })
  t.equal(load({ DATABASE_POOL_MODE: ' Transaction ' }).databasePoolMode, 'transaction', 'a process that never LISTENs (the worker) needs no DATABASE_LISTEN_URL')
  t.throws(() => load({ DATABASE_POOL_MODE: 'transaction' }, { listens: true }), {
    name: 'ConfigError',
    message: 'DATABASE_LISTEN_URL is required when DATABASE_POOL_MODE=transaction: LISTEN hears nothing through a transaction-mode pooler, so name the server or a session-mode pool'
  })
  t.throws(() => load({ DATABASE_POOL_MODE: 'statement' }), {
    name: 'ConfigError',
    message: 'DATABASE_POOL_MODE must be session (a server or a session-mode pool) or transaction (a transaction-mode pooler such as PgBouncer), got "statement"'
  })
  t.throws(() => load({ DATABASE_LISTEN_URL: 'redis://postgres:5432' }), { name: 'ConfigError', message: 'DATABASE_LISTEN_URL must use postgres: or postgresql:' })
})

t.test('retention: 30 days of runs, 72 hours of raw bodies, no per-workflow limit unless set, 365 days of audit log', async (t) => {
  const load = (env: Record<string, string> = {}) => loadConfig({ DATA_DIR: dataDir(), ...env })
  t.same(load().retention, { runDays: 30, rawBodyHours: 72, maxRunsPerWorkflow: undefined, auditDays: 365 })
  t.same(load({ RUN_RETENTION_DAYS: '7', RAW_BODY_RETENTION_HOURS: '1', RUN_RETENTION_MAX_PER_WORKFLOW: '1000', AUDIT_RETENTION_DAYS: '0' }).retention, { runDays: 7, rawBodyHours: 1, maxRunsPerWorkflow: 1000, auditDays: 0 })
  t.throws(() => load({ AUDIT_RETENTION_DAYS: '-1' }), { name: 'ConfigError', message: 'AUDIT_RETENTION_DAYS must be an integer from 0 to 36500, got "-1"' })
  t.throws(() => load({ RUN_RETENTION_DAYS: '0' }), { name: 'ConfigError', message: 'RUN_RETENTION_DAYS must be an integer from 1 to 36500, got "0"' })
  t.throws(() => load({ RAW_BODY_RETENTION_HOURS: '1.5' }), /^RAW_BODY_RETENTION_HOURS must be an integer/)
  t.throws(() => load({ RUN_RETENTION_MAX_PER_WORKFLOW: '0' }), /^RUN_RETENTION_MAX_PER_WORKFLOW must be an integer from 1/)
})

t.test('time limits: request deadline, database timeouts and the reconciler', async (t) => {
  const load = (env: Record<string, string> = {}) => loadConfig({ DATA_DIR: dataDir(), ...env })
  t.match(load(), {
    timeouts: { requestDeadlineMs: 3000, databaseConnectMs: 2000, databaseStatementMs: 30_000, databaseIdleSeconds: 60 },
    reconciler: { intervalMs: 10_000, graceMs: 2000, runningAfterMs: 60_000 }
  })
  t.match(load({ REQUEST_DEADLINE_MS: '8000' }), { reconciler: { graceMs: 2000 } }, 'a run is accepted once committed: the grace does not follow the deadline')
  t.match(load({ RECONCILER_INTERVAL_MS: '2000', RECONCILER_GRACE_MS: '4000', RECONCILER_RUNNING_AFTER_MS: '5000' }), { reconciler: { intervalMs: 2000, graceMs: 4000, runningAfterMs: 5000 } })
  t.throws(() => load({ RECONCILER_RUNNING_AFTER_MS: '500' }), /^RECONCILER_RUNNING_AFTER_MS must be an integer from 1000 to 86400000/)
  t.throws(() => load({ REQUEST_DEADLINE_MS: '500' }), /^REQUEST_DEADLINE_MS must be an integer from 2000 to 60000/)
})

t.test('traces: off unless an OTLP endpoint is set; the standard OTEL_* settings', async (t) => {
  const tracing = (env: Record<string, string>) => loadConfig({ DATA_DIR: dataDir(), ...env }).tracing
  t.same(tracing({}), {
    tracesUrl: undefined,
    protocol: 'http/json',
    serviceName: undefined,
    sampler: 'parentbased_always_on',
    samplerRatio: 1,
    batch: { scheduleDelayMs: 5000, maxQueueSize: 2048, maxExportBatchSize: 512, exportTimeoutMs: 30_000 },
    httpRequestTraceparent: true
  }, 'off, and an http_request sends a traceparent once tracing is on')
  t.equal(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracesUrl, 'http://collector:4318/v1/traces', 'the base endpoint plus the traces path')
  t.equal(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).protocol, 'http/json', 'JSON unless asked')
  t.equal(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }).protocol, 'http/protobuf', 'the traces setting over the general one')
  t.equal(tracing({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }).protocol, 'http/json', 'read only while tracing is on')
  t.equal(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.com/otlp' }).tracesUrl,
    'https://traces.example.com/otlp', 'the traces endpoint as given, over the base one')
  t.equal(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracesUrl, undefined, 'OTEL_SDK_DISABLED turns it off')
  t.equal(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }).tracesUrl, undefined, 'so does OTEL_TRACES_EXPORTER=none')
  t.match(tracing({ OTEL_SERVICE_NAME: 'switchboard-eu', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25', HTTP_REQUEST_TRACEPARENT: 'false', OTEL_BSP_SCHEDULE_DELAY: '100' }),
    { serviceName: 'switchboard-eu', sampler: 'parentbased_traceidratio', samplerRatio: 0.25, httpRequestTraceparent: false, batch: { scheduleDelayMs: 100 } })

  const refused = (env: Record<string, string>): string[] => (t.throws(() => loadConfig({ DATA_DIR: dataDir(), ...env })) as ConfigError).problems.map((problem) => problem.message)
  t.same(refused({
    OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
    OTEL_TRACES_SAMPLER: 'jaeger_remote',
    OTEL_TRACES_SAMPLER_ARG: '2',
    OTEL_BSP_MAX_QUEUE_SIZE: '100',
    HTTP_REQUEST_TRACEPARENT: 'sometimes'
  }), [
    'OTEL_BSP_MAX_EXPORT_BATCH_SIZE (512) must be at most OTEL_BSP_MAX_QUEUE_SIZE (100)',
    'OTEL_EXPORTER_OTLP_ENDPOINT must use http: or https:',
    'OTEL_TRACES_SAMPLER must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio, got "jaeger_remote"',
    'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "2"',
    'HTTP_REQUEST_TRACEPARENT must be true or false, got "sometimes"'
  ], 'each bad setting named, all at once')
  t.same(refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    ['OTEL_EXPORTER_OTLP_PROTOCOL must be http/json or http/protobuf (OTLP over HTTP, e.g. to a collector\'s port 4318), got "grpc"'])
  t.same(refused({ OTEL_TRACES_EXPORTER: 'zipkin' }), ['OTEL_TRACES_EXPORTER must be otlp or none, got "zipkin"'])
})
