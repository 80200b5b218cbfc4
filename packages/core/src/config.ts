import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import ipaddr from 'ipaddr.js'
import { createLogger } from './logger.ts'
import { QUEUE_NAMES, type QueueName } from './queues/catalog.ts'
import { clusterUrl, isClusterUrl, parseClusterNodes, parseClusterUrl, RedisAddressError } from './queues/redis-url.ts'
import { MAX_QUOTA, type Quotas } from './users/quotas.ts'

/** Bounds on what a workflow author or caller controls (README, Configuration and Security). */
export interface Limits {
  /** WORKFLOW_MAX_NODES: nodes in one workflow. */
  workflowMaxNodes: number
  /** CRON_MIN_INTERVAL_SECONDS: the shortest time a cron expression may leave between two ticks. */
  cronMinIntervalSeconds: number
  /** EVENT_FANOUT_MAX: runs one event emission may start. */
  eventFanoutMax: number
  /** CODE_MAX_BYTES: the most a code node's code may take, in bytes of UTF-8 (README, Code). */
  codeMaxBytes: number
  /** SUBWORKFLOW_MAX_DEPTH: levels of child runs (run_workflow, foreach) below a run started by a trigger. */
  subworkflowMaxDepth: number
  /** FOREACH_MAX_ITEMS: the items one foreach node runs. */
  foreachMaxItems: number
}

export const DEFAULT_LIMITS: Limits = {
  workflowMaxNodes: 2000,
  cronMinIntervalSeconds: 60,
  eventFanoutMax: 20_000,
  codeMaxBytes: 64 * 1024,
  subworkflowMaxDepth: 10,
  foreachMaxItems: 10_000
}

/** The sandbox of code nodes in each worker (README, Code). */
export interface CodeSandboxConfig {
  /** CODE_SANDBOX_THREADS: worker threads running code nodes; code nodes beyond wait for one. */
  threads: number
  /** CODE_MEMORY_BYTES: the memory one code node may use. */
  memoryBytes: number
  /** CODE_CPU_MS: the time one code node may compute. */
  cpuMs: number
}

/** The model provider of the assistant and the AI nodes (README, The assistant). */
export interface AiConfig {
  /**
   * AI_API_URL: an OpenAI-compatible Chat Completions base URL (OpenAI, Azure OpenAI, Ollama, vLLM,
   * LM Studio, llama.cpp server). Only the operator sets it: accounts choose a model and a key, never an address.
   */
  apiUrl: string
  /** AI_API_KEY: the provider key; an account may name a bearer credential instead. */
  apiKey?: string
  /** AI_MODEL: unset, the assistant is off (and says so in /health/ready) unless an account names its own model. */
  model?: string
  /** AI_TIMEOUT_MS: one model call, retries included. */
  timeoutMs: number
  /** AI_MAX_RETRIES: retries of a model call answered 429 or 5xx (with the provider's Retry-After). */
  maxRetries: number
  /** AI_TURN_TIMEOUT_MS: one assistant turn, from its claim to its reply, tool runs included. */
  turnTimeoutMs: number
  /** AI_MAX_TOOL_CALLS: tool calls one turn may make; past them the model is asked for its reply without tools. */
  maxToolCalls: number
  /** AI_HISTORY_MESSAGES / AI_HISTORY_MAX_CHARS: the latest messages of the conversation a turn reads, and their total size. */
  historyMessages: number
  historyMaxChars: number
  /** AI_MAX_RESPONSE_BYTES: a provider answer larger than this fails the call (a turn never reads an unbounded body). */
  maxResponseBytes: number
  /** AI_MAX_OUTPUT_TOKENS: the most a model may write in one answer (`max_tokens`). */
  maxOutputTokens: number
  /** AI_EMBEDDING_MODEL: the provider's `/embeddings` model knowledge passages are embedded with; unset, retrieval is full-text search alone (README, Knowledge). */
  embeddingModel?: string
  /** AI_EMBEDDING_DIMENSIONS: the `dimensions` asked of the model (fewer, smaller vectors), unset: the model's own. */
  embeddingDimensions?: number
  /** AI_EMBEDDING_MIN_SIMILARITY: the cosine similarity from which an embedded passage counts as relevant. */
  embeddingMinSimilarity: number
  /** KNOWLEDGE_VECTOR_CACHE_BYTES: the embeddings a process keeps in memory to rank passages, across numbers. */
  knowledgeVectorCacheBytes: number
  /** KNOWLEDGE_INDEX_CONCURRENCY: sources a worker indexes at once (each PDF on a thread of up to 256 MB heap and 64 MiB buffers). */
  knowledgeIndexConcurrency: number
}

export interface Timeouts {
  /** REQUEST_DEADLINE_MS: `/fire` and the inbound webhook answer within this; a run is kept only if it was stored and queued in time. */
  requestDeadlineMs: number
  /** DATABASE_CONNECT_TIMEOUT_MS: a PostgreSQL connection attempt gives up after this. */
  databaseConnectMs: number
  /** DATABASE_STATEMENT_TIMEOUT_MS: the api's statements (and idle transactions) are ended by the server after this. */
  databaseStatementMs: number
  /** DATABASE_IDLE_TIMEOUT_SECONDS: an unused pool connection is closed after this, so none goes stale. */
  databaseIdleSeconds: number
}

/**
 * DATABASE_POOL_MODE: what DATABASE_URL reaches, a server or a session-mode pool (`session`), or a
 * transaction-mode pooler such as PgBouncer (`transaction`), where each transaction may run on
 * another server connection (docs/operations.md, PgBouncer).
 */
export const DATABASE_POOL_MODES = ['session', 'transaction'] as const
export type DatabasePoolMode = typeof DATABASE_POOL_MODES[number]

/** The samplers of OTEL_TRACES_SAMPLER that the tracing SDK has without a remote service. */
export const TRACE_SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const
export type TraceSampler = typeof TRACE_SAMPLERS[number]

/** The encodings of OTLP over HTTP: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL. */
export const OTLP_PROTOCOLS = ['http/json', 'http/protobuf'] as const
export type OtlpProtocol = typeof OTLP_PROTOCOLS[number]

export interface TracingConfig {
  /**
   * Where spans go, by OTLP over HTTP: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or
   * OTEL_EXPORTER_OTLP_ENDPOINT plus `/v1/traces`. Undefined (neither set, OTEL_SDK_DISABLED=true or
   * OTEL_TRACES_EXPORTER=none): tracing is off and nothing of it is loaded.
   */
  tracesUrl?: string
  /** How spans are encoded: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else http/json (docs/decisions.md: cheaper than protobuf here). */
  protocol: OtlpProtocol
  /** OTEL_SERVICE_NAME; undefined: `switchboard-api` or `switchboard-worker`. */
  serviceName?: string
  /** OTEL_TRACES_SAMPLER (default parentbased_always_on) and, for the ratio samplers, OTEL_TRACES_SAMPLER_ARG (default 1). */
  sampler: TraceSampler
  samplerRatio: number
  /** The batch span processor (OTEL_BSP_*): spans beyond `maxQueueSize` waiting for export are dropped, never held. */
  batch: {
    scheduleDelayMs: number
    maxQueueSize: number
    maxExportBatchSize: number
    exportTimeoutMs: number
  }
  /** HTTP_REQUEST_TRACEPARENT: an http_request node sends its span's W3C traceparent while tracing is on. */
  httpRequestTraceparent: boolean
}

export interface EventSubscriptionsConfig {
  /** EVENT_DELIVERY_TIMEOUT_MS: one attempt, from connecting to the end of the answer's excerpt. */
  timeoutMs: number
  /** EVENT_DELIVERY_RETRY_BASE_MS: the wait before the first retry; each later one doubles. */
  retryBaseMs: number
  /** EVENT_DELIVERY_RETRY_MAX_DELAY_MS: the longest wait between two attempts. */
  retryMaxDelayMs: number
  /** EVENT_DELIVERY_RETRY_WINDOW_MS: no retry starts later than this after the delivery was created; then it is failed. */
  retryWindowMs: number
  /** EVENT_SUBSCRIPTION_DISABLE_AFTER: a subscription whose deliveries failed this many times in a row is disabled. */
  disableAfter: number
  /** EVENT_DELIVERY_CONCURRENCY: deliveries in flight in each worker process. */
  concurrency: number
  /** EVENT_SUBSCRIPTIONS_MAX_PER_USER: the most subscriptions one user may have. */
  maxPerUser: number
}

export interface Config {
  nodeEnv: string
  port: number
  host: string
  /** API_METRICS_PORT: the api's Prometheus listener (on HOST), apart from the public PORT. */
  apiMetricsPort: number
  databaseUrl: string
  /** DATABASE_POOL_MODE: `transaction` prepares no statement and sends no session setting at connect. */
  databasePoolMode: DatabasePoolMode
  /** DATABASE_LISTEN_URL: a server or a session-mode pool the api's LISTENs use; undefined: DATABASE_URL. */
  databaseListenUrl?: string
  /** One Redis (`redis://`, `rediss://`) or a Redis Cluster (`redis+cluster://host:port,…`, also what REDIS_CLUSTER_NODES becomes). */
  redisUrl: string
  /** Ports of the default local addresses (used when DATABASE_URL / REDIS_URL are unset). */
  localPostgresPort: number
  localRedisPort: number
  /** BullMQ's key prefix; on a cluster each queue's keys also carry its hash tag (queues/connections.ts). */
  queuePrefix: string
  jwtSecret: string
  adminEmail: string
  adminPassword: string
  chat: {
    apiUrl: string
    accessToken?: string
    phoneNumberId?: string
    businessAccountId?: string
    appSecret?: string
    verifyToken?: string
    /** CHAT_MEDIA_MAX_BYTES: the largest media `GET /api/chat/messages/:id/media` passes on. */
    mediaMaxBytes: number
    /** CHAT_MEDIA_TIMEOUT_MS: one media download, from the platform's media record to the last byte. */
    mediaTimeoutMs: number
  }
  /** Jobs in flight per queue in each worker process. */
  workerConcurrency: number
  /** The queues this worker process consumes (default all). */
  workerQueues: QueueName[]
  /** The worker's health and metrics listener (on HOST). */
  workerHttpPort: number
  /** WORKER_DRAIN_MS: how long a stopping worker lets its running jobs finish before it exits (README, Configuration). */
  workerDrainMs: number
  /** Connections of each process's PostgreSQL pool. */
  databasePoolMax: number
  /** How long the stores may take before a request or a connection gives up (README, Configuration). */
  timeouts: Timeouts
  /** The worker's reconciler (engine/reconciler.ts): how often it looks and how old work must be before it acts. */
  reconciler: {
    /** RECONCILER_INTERVAL_MS: between two passes (a pass also runs at once when Redis comes back). */
    intervalMs: number
    /** RECONCILER_GRACE_MS: a PENDING run or a stored chat delivery this old without a job gets one (its own enqueue had that long). */
    graceMs: number
    /** RECONCILER_RUNNING_AFTER_MS: a RUNNING run started this long ago without a live job is taken over. */
    runningAfterMs: number
  }
  /** 32 bytes: encrypts chat account tokens and credentials at rest. */
  encryptionKey: Buffer
  /** ENCRYPTION_KEYS_PREVIOUS: keys that only decrypt, while a rotation re-encrypts with ENCRYPTION_KEY. */
  encryptionKeysPrevious: Buffer[]
  httpRequestAllowPrivate: boolean
  /** Outbound event subscriptions (README, Event subscriptions): their deliveries' bounds. */
  eventSubscriptions: EventSubscriptionsConfig
  /** The most a node's output (and its rendered config) may serialize to, in bytes of JSON. */
  nodeOutputMaxBytes: number
  /** The most a run's `result` (triggerData and every node's output) may serialize to, in bytes of JSON. */
  runResultMaxBytes: number
  limits: Limits
  codeSandbox: CodeSandboxConfig
  ai: AiConfig
  /** Every user's quotas unless an admin set others for them (USER_QUOTA_*; README, Quotas). */
  quotas: Quotas
  /**
   * WORKER_USER_SHARE: the share of a worker's run slots (per queue) one user's runs may hold
   * while other runs wait for a slot (fair scheduling, README, Quotas).
   */
  workerUserShare: number
  /** What the worker deletes (retention/retention.ts); chat messages are never deleted. */
  retention: {
    /** RUN_RETENTION_DAYS: finished runs, with their log lines, are deleted this long after they were created. */
    runDays: number
    /** RAW_BODY_RETENTION_HOURS: a finished run's raw webhook body is cleared this long after it was created. */
    rawBodyHours: number
    /** RUN_RETENTION_MAX_PER_WORKFLOW: when set, only this many finished runs per workflow (the newest) are kept. */
    maxRunsPerWorkflow?: number
    /** AUDIT_RETENTION_DAYS: audit log rows are deleted this long after they were written; 0 keeps them for ever. */
    auditDays: number
  }
  /**
   * Peers whose X-Forwarded-For is believed (Fastify's `trustProxy`): true (any peer), false
   * (none, the default), or addresses, CIDR ranges and the named ranges loopback, linklocal and uniquelocal.
   */
  trustProxy: boolean | string[]
  logLevel: string
  /** OpenTelemetry traces (observability/tracing.ts), from the standard OTEL_* settings (README, Configuration). */
  tracing: TracingConfig
  /** Where development secrets are kept when none are configured. */
  dataDir: string
}

/** One bad or missing setting: its name and what is wrong with it. */
export interface ConfigProblem {
  setting: string
  message: string
}

/** Every bad or missing setting of an environment, so that one look at the log fixes them all. */
export class ConfigError extends Error {
  override name = 'ConfigError'

  constructor (readonly problems: ConfigProblem[]) {
    super(problems.map((problem) => problem.message).join('; '))
  }
}

/** What a reader of one setting throws; loadConfig collects them into one ConfigError. */
class SettingError extends Error {
  constructor (readonly setting: string, message: string) {
    super(message)
  }
}

type Env = Record<string, string | undefined>

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

function text (env: Env, name: string): string | undefined {
  const value = env[name]?.trim()
  return value === '' ? undefined : value
}

function integer (env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new SettingError(name, `${name} must be an integer from ${min} to ${max}, got "${raw}"`)
  }
  return value
}

/** A fraction greater than 0 and at most 1. */
function share (env: Env, name: string, fallback: number): number {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!/^(0|1)?(\.\d+)?$/.test(raw) || !(value > 0 && value <= 1)) throw new SettingError(name, `${name} must be a number greater than 0 and at most 1, got "${raw}"`)
  return value
}

function boolean (env: Env, name: string, fallback = false): boolean {
  const raw = text(env, name)?.toLowerCase()
  if (raw === undefined) return fallback
  if (raw === 'true' || raw === '1') return true
  if (raw === 'false' || raw === '0') return false
  throw new SettingError(name, `${name} must be true or false, got "${raw}"`)
}

function url (env: Env, name: string, fallback: string, protocols: string[]): string {
  const raw = text(env, name) ?? fallback
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new SettingError(name, `${name} must be a URL`)
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new SettingError(name, `${name} must use ${protocols.join(' or ')}`)
  }
  return raw.replace(/\/+$/, '')
}

/**
 * REDIS_URL (one Redis, or a cluster as `redis+cluster://`), or the cluster's seed nodes in
 * REDIS_CLUSTER_NODES, never both: which one would win is not obvious to whoever reads the deployment.
 */
function redisUrl (env: Env, localRedisPort: number): string {
  const nodes = text(env, 'REDIS_CLUSTER_NODES')
  const raw = text(env, 'REDIS_URL')
  try {
    if (nodes !== undefined) {
      if (raw !== undefined) throw new SettingError('REDIS_URL', 'REDIS_URL and REDIS_CLUSTER_NODES are both set: set one (a cluster may also be given as REDIS_URL=redis+cluster://host:port,host:port)')
      return clusterUrl(parseClusterNodes(nodes))
    }
    if (raw !== undefined && isClusterUrl(raw)) {
      parseClusterUrl(raw)
      return raw
    }
  } catch (err) {
    if (!(err instanceof RedisAddressError)) throw err
    throw nodes !== undefined
      ? new SettingError('REDIS_CLUSTER_NODES', `REDIS_CLUSTER_NODES must be a comma-separated list of host:port: ${err.message}`)
      : new SettingError('REDIS_URL', `REDIS_URL ${err.message} (redis+cluster://[user:password@]host:port,host:port)`)
  }
  if (raw !== undefined && /^[a-z][a-z0-9+.-]*:/i.test(raw) && !/^rediss?:/i.test(raw)) {
    throw new SettingError('REDIS_URL', 'REDIS_URL must use redis:, rediss:, redis+cluster: or rediss+cluster:')
  }
  return url(env, 'REDIS_URL', `redis://127.0.0.1:${localRedisPort}`, ['redis:', 'rediss:'])
}

/**
 * On a cluster, Redis hashes a key by the text between its first `{` and the next `}`; an empty
 * `{}` there makes it hash the whole key, which would scatter a queue's keys over slots.
 */
function queuePrefix (env: Env, cluster: boolean): string {
  const prefix = text(env, 'QUEUE_PREFIX') ?? 'switchboard'
  if (cluster && /^[^{]*\{\}/.test(prefix)) {
    throw new SettingError('QUEUE_PREFIX', `QUEUE_PREFIX must not start a hash tag with "{}" on a Redis Cluster, got "${prefix}"`)
  }
  return prefix
}

/** proxy-addr's named ranges, which Fastify's `trustProxy` expands. */
const NAMED_PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal']

/** An address, optionally with a prefix length or (IPv4) netmask, as proxy-addr reads it; never a hop count. */
function isProxyRange (entry: string): boolean {
  if (NAMED_PROXY_RANGES.includes(entry)) return true
  const [address = '', range, ...rest] = entry.split('/')
  if (rest.length > 0) return false
  const kind = ipaddr.IPv4.isValidFourPartDecimal(address) ? 'ipv4' : ipaddr.IPv6.isValid(address) ? 'ipv6' : undefined
  if (kind === undefined) return false
  if (range === undefined) return true
  if (/^[0-9]+$/.test(range)) return Number(range) >= 1 && Number(range) <= (kind === 'ipv4' ? 32 : 128)
  return kind === 'ipv4' && ipaddr.IPv4.isValidFourPartDecimal(range) && (ipaddr.IPv4.parse(range).prefixLengthFromSubnetMask() ?? 0) > 0
}

/**
 * By default no proxy is trusted: a client's address is the connection's. Trusting the private
 * ranges let anything beside the api (a container on its network, a pod of the cluster, a
 * process on the host) choose the address the login limits count, and so pose as a user's
 * address to lock it out (docs/decisions.md, "Login floods, the metrics port and /docs").
 */
function trustProxy (env: Env): boolean | string[] {
  const raw = text(env, 'TRUST_PROXY')
  if (raw === undefined) return false
  if (raw.toLowerCase() === 'true') return true
  if (raw.toLowerCase() === 'false') return false
  const entries = raw.split(',').map((entry) => entry.trim())
  const bad = entries.find((entry) => !isProxyRange(entry))
  if (bad !== undefined) {
    throw new SettingError('TRUST_PROXY', `TRUST_PROXY must be true, false or a comma-separated list of addresses, CIDR ranges, loopback, linklocal and uniquelocal, got "${bad}"`)
  }
  return entries
}

/**
 * Development secrets live in a file under the data directory so that the api
 * and the worker of one checkout agree on them and tokens survive restarts.
 */
function devSecrets (dataDir: string): { jwtSecret: string, encryptionKey: string } {
  const file = join(dataDir, 'dev-secrets.json')
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    const secrets = {
      jwtSecret: randomBytes(48).toString('base64url'),
      encryptionKey: randomBytes(32).toString('base64')
    }
    mkdirSync(dataDir, { recursive: true })
    try {
      writeFileSync(file, JSON.stringify(secrets), { flag: 'wx', mode: 0o600 })
      return secrets
    } catch {
      // Another process wrote it first: use theirs.
      return JSON.parse(readFileSync(file, 'utf8'))
    }
  }
}

function workerQueues (env: Env): QueueName[] {
  const raw = text(env, 'WORKER_QUEUES')
  if (raw === undefined) return [...QUEUE_NAMES]
  const names = raw.split(',').map((name) => name.trim())
  const unknown = names.find((name) => !(QUEUE_NAMES as readonly string[]).includes(name))
  if (unknown !== undefined) {
    throw new SettingError('WORKER_QUEUES', `WORKER_QUEUES must be a comma-separated list of ${QUEUE_NAMES.join(', ')}, got "${unknown}"`)
  }
  // In the order of QUEUE_NAMES, each once.
  return QUEUE_NAMES.filter((name) => names.includes(name))
}

function databasePoolMode (env: Env): DatabasePoolMode {
  const raw = text(env, 'DATABASE_POOL_MODE')?.toLowerCase() ?? 'session'
  if (!(DATABASE_POOL_MODES as readonly string[]).includes(raw)) {
    throw new SettingError('DATABASE_POOL_MODE', `DATABASE_POOL_MODE must be session (a server or a session-mode pool) or transaction (a transaction-mode pooler such as PgBouncer), got "${raw}"`)
  }
  return raw as DatabasePoolMode
}

/** The OTLP encoding, the signal's setting over the general one; gRPC (another port) is not spoken. */
function otlpProtocol (env: Env): OtlpProtocol {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL']) {
    const protocol = text(env, name)
    if (protocol === undefined) continue
    if (!(OTLP_PROTOCOLS as readonly string[]).includes(protocol)) {
      throw new SettingError(name, `${name} must be http/json or http/protobuf (OTLP over HTTP, e.g. to a collector's port 4318), got "${protocol}"`)
    }
    return protocol as OtlpProtocol
  }
  return 'http/json'
}

/**
 * Where the traces exporter sends spans, as the OpenTelemetry SDKs read it: the signal's own
 * endpoint as given, else the base endpoint plus the signal's path; none unless tracing is wanted.
 */
function tracesUrl (env: Env): string | undefined {
  if (boolean(env, 'OTEL_SDK_DISABLED')) return undefined
  const exporter = text(env, 'OTEL_TRACES_EXPORTER')?.toLowerCase() ?? 'otlp'
  if (exporter === 'none') return undefined
  if (exporter !== 'otlp') throw new SettingError('OTEL_TRACES_EXPORTER', `OTEL_TRACES_EXPORTER must be otlp or none, got "${exporter}"`)
  if (text(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') !== undefined) return url(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', '', ['http:', 'https:'])
  if (text(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') === undefined) return undefined
  return `${url(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', '', ['http:', 'https:'])}/v1/traces`
}

function traceSampler (env: Env): TraceSampler {
  const raw = text(env, 'OTEL_TRACES_SAMPLER')?.toLowerCase() ?? 'parentbased_always_on'
  if (!(TRACE_SAMPLERS as readonly string[]).includes(raw)) {
    throw new SettingError('OTEL_TRACES_SAMPLER', `OTEL_TRACES_SAMPLER must be one of ${TRACE_SAMPLERS.join(', ')}, got "${raw}"`)
  }
  return raw as TraceSampler
}

function samplerRatio (env: Env): number {
  const raw = text(env, 'OTEL_TRACES_SAMPLER_ARG')
  if (raw === undefined) return 1
  const ratio = Number(raw)
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) throw new SettingError('OTEL_TRACES_SAMPLER_ARG', `OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "${raw}"`)
  return ratio
}

/** Keys in ENCRYPTION_KEYS_PREVIOUS: a rotation needs one or two; a long list means rotations are not finished. */
const MAX_PREVIOUS_KEYS = 10

/** A 32-byte key in base64, as ENCRYPTION_KEY and each of ENCRYPTION_KEYS_PREVIOUS hold it. */
function encryptionKeyOf (name: string, value: string): Buffer {
  const key = Buffer.from(value, 'base64')
  if (key.length !== 32) throw new SettingError(name, `${name} must be 32 bytes, base64-encoded`)
  return key
}

function previousEncryptionKeys (env: Env): Buffer[] {
  const raw = text(env, 'ENCRYPTION_KEYS_PREVIOUS')
  if (raw === undefined) return []
  const keys = raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  if (keys.length > MAX_PREVIOUS_KEYS) throw new SettingError('ENCRYPTION_KEYS_PREVIOUS', `ENCRYPTION_KEYS_PREVIOUS holds at most ${MAX_PREVIOUS_KEYS} keys`)
  return keys.map((key) => encryptionKeyOf('ENCRYPTION_KEYS_PREVIOUS', key))
}

/** Words that mark a value copied from an example rather than generated. */
const PLACEHOLDER = /change-?me|replace-?me|placeholder/i

/**
 * Reads and validates the environment once. Every bad or missing setting is collected (the
 * first problem of each) and thrown together as one ConfigError: a deployment learns all it
 * must fix from one start, not one setting per crash. `listens`: the process LISTENs (the api),
 * which a transaction-mode pooler never lets it hear, so DATABASE_LISTEN_URL must then be set.
 */
export function loadConfig (env: Env = process.env, { listens = false } = {}): Config {
  const problems: ConfigProblem[] = []
  const refuse = (setting: string, message: string): void => {
    if (!problems.some((problem) => problem.setting === setting)) problems.push({ setting, message })
  }
  /** The setting's value, or `fallback` once its problem is noted, so that the other settings are read too. */
  const read = <T>(fallback: T, value: () => T): T => {
    try {
      return value()
    } catch (err) {
      if (!(err instanceof SettingError)) throw err
      refuse(err.setting, err.message)
      return fallback
    }
  }
  const int = (name: string, fallback: number, min: number, max: number): number =>
    read(fallback, () => integer(env, name, fallback, min, max))

  const nodeEnv = text(env, 'NODE_ENV') ?? 'development'
  const production = nodeEnv === 'production'
  const dataDir = text(env, 'DATA_DIR') ?? '.switchboard'

  let jwtSecret = text(env, 'JWT_SECRET')
  let encryptionKeyText = text(env, 'ENCRYPTION_KEY')
  if (production) {
    if (jwtSecret === undefined || jwtSecret.length < 32) {
      refuse('JWT_SECRET', 'JWT_SECRET of at least 32 characters is required when NODE_ENV=production')
    }
    if (encryptionKeyText === undefined) refuse('ENCRYPTION_KEY', 'ENCRYPTION_KEY is required when NODE_ENV=production')
  } else if (jwtSecret === undefined || encryptionKeyText === undefined) {
    const secrets = devSecrets(dataDir)
    jwtSecret ??= secrets.jwtSecret
    encryptionKeyText ??= secrets.encryptionKey
  }
  if (jwtSecret !== undefined && jwtSecret.length < 16) refuse('JWT_SECRET', 'JWT_SECRET must be at least 16 characters')
  const keyText = encryptionKeyText
  const encryptionKey = keyText === undefined ? undefined : read(undefined, () => encryptionKeyOf('ENCRYPTION_KEY', keyText))

  const adminEmail = (text(env, 'ADMIN_EMAIL') ?? 'admin@example.com').toLowerCase()
  if (!/^[^\s@]+@[^\s@]+$/.test(adminEmail)) refuse('ADMIN_EMAIL', 'ADMIN_EMAIL must be an email address')
  const adminPassword = env.ADMIN_PASSWORD ?? 'admin'
  if (production && adminPassword === 'admin') {
    refuse('ADMIN_PASSWORD', 'ADMIN_PASSWORD must be changed from its default when NODE_ENV=production')
  }
  if (adminPassword.length === 0) refuse('ADMIN_PASSWORD', 'ADMIN_PASSWORD must not be empty')
  const chatAppSecret = text(env, 'CHAT_APP_SECRET')
  // Without it anyone who knows a phone number id could post customer messages and statuses.
  if (production && chatAppSecret === undefined) {
    refuse('CHAT_APP_SECRET', 'CHAT_APP_SECRET is required when NODE_ENV=production (inbound chat deliveries must be signed)')
  }

  // Values from examples (an old compose file's `change-me-…` secret, an all-zero key) pass the
  // length checks but are public: production refuses them.
  if (production) {
    if (jwtSecret !== undefined && PLACEHOLDER.test(jwtSecret)) {
      refuse('JWT_SECRET', 'JWT_SECRET is a placeholder: generate one, e.g. openssl rand -base64 48')
    }
    if (encryptionKey?.every((byte) => byte === 0) === true) {
      refuse('ENCRYPTION_KEY', 'ENCRYPTION_KEY is a placeholder (all zero): generate one, e.g. openssl rand -base64 32')
    }
    if (PLACEHOLDER.test(adminPassword) || adminPassword === 'password') {
      refuse('ADMIN_PASSWORD', 'ADMIN_PASSWORD is a placeholder: choose a real password when NODE_ENV=production')
    }
  }

  const nodeOutputMaxBytes = int('NODE_OUTPUT_MAX_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024)
  // jsonb holds at most 255 MiB; each step of a run rewrites the whole result.
  const runResultMaxBytes = int('RUN_RESULT_MAX_BYTES', 8 * 1024 * 1024, 1024, 128 * 1024 * 1024)
  if (runResultMaxBytes < nodeOutputMaxBytes) {
    refuse('RUN_RESULT_MAX_BYTES', `RUN_RESULT_MAX_BYTES (${runResultMaxBytes}) must be at least NODE_OUTPUT_MAX_BYTES (${nodeOutputMaxBytes})`)
  }

  const logLevel = text(env, 'LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.includes(logLevel)) refuse('LOG_LEVEL', `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`)

  const timeouts: Timeouts = {
    requestDeadlineMs: int('REQUEST_DEADLINE_MS', 3000, 2000, 60_000),
    databaseConnectMs: int('DATABASE_CONNECT_TIMEOUT_MS', 2000, 100, 60_000),
    databaseStatementMs: int('DATABASE_STATEMENT_TIMEOUT_MS', 30_000, 1000, 3_600_000),
    databaseIdleSeconds: int('DATABASE_IDLE_TIMEOUT_SECONDS', 60, 1, 86_400)
  }
  const reconciler = {
    intervalMs: int('RECONCILER_INTERVAL_MS', 10_000, 100, 3_600_000),
    graceMs: int('RECONCILER_GRACE_MS', 2000, 0, 3_600_000),
    runningAfterMs: int('RECONCILER_RUNNING_AFTER_MS', 60_000, 1000, 86_400_000)
  }

  // The batch span processor's defaults are the OpenTelemetry specification's.
  const traceBatch = {
    scheduleDelayMs: int('OTEL_BSP_SCHEDULE_DELAY', 5000, 1, 3_600_000),
    maxQueueSize: int('OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1, 1_000_000),
    maxExportBatchSize: int('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1, 1_000_000),
    exportTimeoutMs: int('OTEL_BSP_EXPORT_TIMEOUT', 30_000, 1, 3_600_000)
  }
  if (traceBatch.maxExportBatchSize > traceBatch.maxQueueSize) {
    refuse('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', `OTEL_BSP_MAX_EXPORT_BATCH_SIZE (${traceBatch.maxExportBatchSize}) must be at most OTEL_BSP_MAX_QUEUE_SIZE (${traceBatch.maxQueueSize})`)
  }
  const tracesTo = read(undefined, () => tracesUrl(env))
  const tracing: TracingConfig = {
    tracesUrl: tracesTo,
    // Read only when tracing is on: a shared environment's gRPC setting must not stop a process that exports nothing.
    protocol: tracesTo === undefined ? 'http/json' : read('http/json', () => otlpProtocol(env)),
    serviceName: text(env, 'OTEL_SERVICE_NAME'),
    sampler: read('parentbased_always_on', () => traceSampler(env)),
    samplerRatio: read(1, () => samplerRatio(env)),
    batch: traceBatch,
    httpRequestTraceparent: read(true, () => boolean(env, 'HTTP_REQUEST_TRACEPARENT', true))
  }

  const localPostgresPort = int('LOCAL_POSTGRES_PORT', 5432, 1, 65535)
  const localRedisPort = int('LOCAL_REDIS_PORT', 6379, 1, 65535)
  const redis = read(`redis://127.0.0.1:${localRedisPort}`, () => redisUrl(env, localRedisPort))

  const poolMode = read<DatabasePoolMode>('session', () => databasePoolMode(env))
  const listenUrlSet = text(env, 'DATABASE_LISTEN_URL') !== undefined
  const databaseListenUrl = listenUrlSet ? read(undefined, () => url(env, 'DATABASE_LISTEN_URL', '', ['postgres:', 'postgresql:'])) : undefined
  if (listens && poolMode === 'transaction' && !listenUrlSet) {
    refuse('DATABASE_LISTEN_URL', 'DATABASE_LISTEN_URL is required when DATABASE_POOL_MODE=transaction: LISTEN hears nothing through a transaction-mode pooler, so name the server or a session-mode pool')
  }

  const port = int('PORT', 3000, 0, 65535)
  const apiMetricsPort = int('API_METRICS_PORT', 3002, 0, 65535)
  if (apiMetricsPort !== 0 && apiMetricsPort === port) refuse('API_METRICS_PORT', `API_METRICS_PORT must differ from PORT (both ${port}): /metrics has a listener of its own`)

  const config: Config = {
    nodeEnv,
    port,
    host: text(env, 'HOST') ?? '0.0.0.0',
    apiMetricsPort,
    databaseUrl: read('', () => url(env, 'DATABASE_URL', `postgres://postgres@127.0.0.1:${localPostgresPort}/switchboard`, ['postgres:', 'postgresql:'])),
    databasePoolMode: poolMode,
    databaseListenUrl,
    redisUrl: redis,
    localPostgresPort,
    localRedisPort,
    queuePrefix: read('', () => queuePrefix(env, isClusterUrl(redis))),
    // Both are set whenever no problem was found (the config is only returned then).
    jwtSecret: jwtSecret ?? '',
    adminEmail,
    adminPassword,
    chat: {
      apiUrl: read('', () => url(env, 'CHAT_API_URL', 'https://graph.facebook.com/v21.0', ['http:', 'https:'])),
      accessToken: text(env, 'CHAT_ACCESS_TOKEN'),
      phoneNumberId: text(env, 'CHAT_PHONE_NUMBER_ID'),
      businessAccountId: text(env, 'CHAT_BUSINESS_ACCOUNT_ID'),
      appSecret: chatAppSecret,
      verifyToken: text(env, 'CHAT_VERIFY_TOKEN'),
      mediaMaxBytes: int('CHAT_MEDIA_MAX_BYTES', 100 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      mediaTimeoutMs: int('CHAT_MEDIA_TIMEOUT_MS', 120_000, 1000, 3_600_000)
    },
    workerConcurrency: int('WORKER_CONCURRENCY', 50, 1, 1000),
    workerQueues: read([], () => workerQueues(env)),
    workerHttpPort: int('WORKER_HTTP_PORT', 3001, 0, 65535),
    workerDrainMs: int('WORKER_DRAIN_MS', 130_000, 1_000, 3_600_000),
    databasePoolMax: int('DATABASE_POOL_MAX', 10, 1, 1000),
    timeouts,
    reconciler,
    encryptionKey: encryptionKey ?? Buffer.alloc(0),
    encryptionKeysPrevious: read([], () => previousEncryptionKeys(env)),
    httpRequestAllowPrivate: read(false, () => boolean(env, 'HTTP_REQUEST_ALLOW_PRIVATE')),
    eventSubscriptions: {
      timeoutMs: int('EVENT_DELIVERY_TIMEOUT_MS', 10_000, 100, 120_000),
      retryBaseMs: int('EVENT_DELIVERY_RETRY_BASE_MS', 30_000, 10, 3_600_000),
      retryMaxDelayMs: int('EVENT_DELIVERY_RETRY_MAX_DELAY_MS', 3_600_000, 10, 86_400_000),
      retryWindowMs: int('EVENT_DELIVERY_RETRY_WINDOW_MS', 86_400_000, 0, 7 * 86_400_000),
      disableAfter: int('EVENT_SUBSCRIPTION_DISABLE_AFTER', 20, 1, 100_000),
      concurrency: int('EVENT_DELIVERY_CONCURRENCY', 20, 1, 1000),
      maxPerUser: int('EVENT_SUBSCRIPTIONS_MAX_PER_USER', 25, 1, 10_000)
    },
    nodeOutputMaxBytes,
    runResultMaxBytes,
    limits: {
      workflowMaxNodes: int('WORKFLOW_MAX_NODES', DEFAULT_LIMITS.workflowMaxNodes, 1, 100_000),
      cronMinIntervalSeconds: int('CRON_MIN_INTERVAL_SECONDS', DEFAULT_LIMITS.cronMinIntervalSeconds, 1, 86_400),
      eventFanoutMax: int('EVENT_FANOUT_MAX', DEFAULT_LIMITS.eventFanoutMax, 1, 1_000_000),
      codeMaxBytes: int('CODE_MAX_BYTES', DEFAULT_LIMITS.codeMaxBytes, 1024, 1024 * 1024),
      subworkflowMaxDepth: int('SUBWORKFLOW_MAX_DEPTH', DEFAULT_LIMITS.subworkflowMaxDepth, 1, 50),
      foreachMaxItems: int('FOREACH_MAX_ITEMS', DEFAULT_LIMITS.foreachMaxItems, 1, 100_000)
    },
    codeSandbox: {
      threads: int('CODE_SANDBOX_THREADS', 2, 1, 64),
      memoryBytes: int('CODE_MEMORY_BYTES', 32 * 1024 * 1024, 1024 * 1024, 1024 * 1024 * 1024),
      cpuMs: int('CODE_CPU_MS', 1000, 10, 60_000)
    },
    ai: {
      apiUrl: read('', () => url(env, 'AI_API_URL', 'https://api.openai.com/v1', ['http:', 'https:'])),
      apiKey: text(env, 'AI_API_KEY'),
      model: text(env, 'AI_MODEL'),
      timeoutMs: int('AI_TIMEOUT_MS', 30_000, 100, 600_000),
      maxRetries: int('AI_MAX_RETRIES', 2, 0, 10),
      turnTimeoutMs: int('AI_TURN_TIMEOUT_MS', 120_000, 1000, 3_600_000),
      maxToolCalls: int('AI_MAX_TOOL_CALLS', 3, 0, 20),
      historyMessages: int('AI_HISTORY_MESSAGES', 20, 1, 200),
      historyMaxChars: int('AI_HISTORY_MAX_CHARS', 16_000, 500, 500_000),
      maxResponseBytes: int('AI_MAX_RESPONSE_BYTES', 1024 * 1024, 4096, 64 * 1024 * 1024),
      maxOutputTokens: int('AI_MAX_OUTPUT_TOKENS', 1024, 16, 128_000),
      embeddingModel: text(env, 'AI_EMBEDDING_MODEL'),
      embeddingDimensions: read(undefined, () => text(env, 'AI_EMBEDDING_DIMENSIONS') === undefined ? undefined : int('AI_EMBEDDING_DIMENSIONS', 0, 1, 4096)),
      embeddingMinSimilarity: read(0.3, () => share(env, 'AI_EMBEDDING_MIN_SIMILARITY', 0.3)),
      knowledgeVectorCacheBytes: int('KNOWLEDGE_VECTOR_CACHE_BYTES', 128 * 1024 * 1024, 1024 * 1024, 16 * 1024 * 1024 * 1024),
      knowledgeIndexConcurrency: int('KNOWLEDGE_INDEX_CONCURRENCY', 2, 1, 64)
    },
    quotas: {
      runsPerMinute: int('USER_QUOTA_RUNS_PER_MINUTE', 60_000, 1, MAX_QUOTA),
      runsInFlight: int('USER_QUOTA_RUNS_IN_FLIGHT', 0, 0, MAX_QUOTA),
      waitingRuns: int('USER_QUOTA_WAITING_RUNS', 100_000, 0, MAX_QUOTA),
      workflows: int('USER_QUOTA_WORKFLOWS', 10_000, 0, MAX_QUOTA),
      credentials: int('USER_QUOTA_CREDENTIALS', 1000, 0, MAX_QUOTA),
      cronWorkflows: int('USER_QUOTA_CRON_WORKFLOWS', 1000, 0, MAX_QUOTA),
      eventListeners: int('USER_QUOTA_EVENT_LISTENERS', 1000, 0, MAX_QUOTA),
      knowledgeSources: int('USER_QUOTA_KNOWLEDGE_SOURCES', 500, 0, MAX_QUOTA)
    },
    workerUserShare: read(0.5, () => share(env, 'WORKER_USER_SHARE', 0.5)),
    retention: {
      runDays: int('RUN_RETENTION_DAYS', 30, 1, 36_500),
      rawBodyHours: int('RAW_BODY_RETENTION_HOURS', 72, 1, 876_000),
      maxRunsPerWorkflow: text(env, 'RUN_RETENTION_MAX_PER_WORKFLOW') === undefined ? undefined : int('RUN_RETENTION_MAX_PER_WORKFLOW', 0, 1, 100_000_000),
      auditDays: int('AUDIT_RETENTION_DAYS', 365, 0, 36_500)
    },
    trustProxy: read(false, () => trustProxy(env)),
    logLevel,
    tracing,
    dataDir
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

/** EX_CONFIG of sysexits.h: the process was started with a bad configuration, and a restart alone will not help. */
export const EXIT_CONFIG = 78

/**
 * What `read` makes of the environment (the configuration of an entry point: the api, the worker,
 * a command); when it throws a ConfigError, one JSON log line naming every bad or missing setting,
 * then exit code 78.
 */
export function configuredOrExit<T> (name: string, read: () => T): T {
  try {
    return read()
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    // pino writes to stdout synchronously by default: the line is out before the exit.
    createLogger('info', name).fatal({ settings: err.problems.map((problem) => problem.setting), problems: err.problems.map((problem) => problem.message) },
      `invalid configuration: ${err.message}`)
    process.exit(EXIT_CONFIG)
  }
}

/** The configuration of an entry point, or its one line and exit code 78 (`configuredOrExit`). */
export function configOrExit (name: string, env: Env = process.env): Config {
  return configuredOrExit(name, () => loadConfig(env))
}
