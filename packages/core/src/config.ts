import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import ipaddr from 'ipaddr.js'

/** Bounds on what a workflow author or caller controls (contract, "Limits and retention"). */
export interface Limits {
  /** WORKFLOW_MAX_NODES: nodes in one workflow. */
  workflowMaxNodes: number
  /** CRON_MIN_INTERVAL_SECONDS: the shortest time a cron expression may leave between two ticks. */
  cronMinIntervalSeconds: number
  /** EVENT_FANOUT_MAX: runs one event emission may start. */
  eventFanoutMax: number
}

export const DEFAULT_LIMITS: Limits = {
  workflowMaxNodes: 2000,
  cronMinIntervalSeconds: 60,
  eventFanoutMax: 20_000
}

export interface Config {
  nodeEnv: string
  port: number
  host: string
  databaseUrl: string
  redisUrl: string
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
  }
  workerConcurrency: number
  /** 32 bytes: encrypts chat account tokens at rest. */
  encryptionKey: Buffer
  httpRequestAllowPrivate: boolean
  limits: Limits
  /**
   * Peers whose X-Forwarded-For is believed (Fastify's `trustProxy`): true (any peer), false
   * (none), or addresses, CIDR ranges and the named ranges loopback, linklocal and uniquelocal.
   */
  trustProxy: boolean | string[]
  logLevel: string
  /** Where development secrets are kept when none are configured. */
  dataDir: string
}

export class ConfigError extends Error {
  override name = 'ConfigError'
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
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`)
  }
  return value
}

function boolean (env: Env, name: string): boolean {
  const raw = text(env, name)?.toLowerCase()
  if (raw === undefined) return false
  if (raw === 'true' || raw === '1') return true
  if (raw === 'false' || raw === '0') return false
  throw new ConfigError(`${name} must be true or false, got "${raw}"`)
}

function url (env: Env, name: string, fallback: string, protocols: string[]): string {
  const raw = text(env, name) ?? fallback
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(`${name} must be a URL`)
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}`)
  }
  return raw.replace(/\/+$/, '')
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
 * By default only proxies on loopback, link-local or private networks (an ingress, a sidecar) are
 * trusted: trusting everyone would let any client pick its own address and escape per-address limits.
 */
function trustProxy (env: Env): boolean | string[] {
  const raw = text(env, 'TRUST_PROXY')
  if (raw === undefined) return [...NAMED_PROXY_RANGES]
  if (raw.toLowerCase() === 'true') return true
  if (raw.toLowerCase() === 'false') return false
  const entries = raw.split(',').map((entry) => entry.trim())
  const bad = entries.find((entry) => !isProxyRange(entry))
  if (bad !== undefined) {
    throw new ConfigError(`TRUST_PROXY must be true, false or a comma-separated list of addresses, CIDR ranges, loopback, linklocal and uniquelocal, got "${bad}"`)
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

/** Reads and validates the environment once; throws ConfigError naming the bad setting. */
export function loadConfig (env: Env = process.env): Config {
  const nodeEnv = text(env, 'NODE_ENV') ?? 'development'
  const production = nodeEnv === 'production'
  const dataDir = text(env, 'DATA_DIR') ?? '.switchboard'

  let jwtSecret = text(env, 'JWT_SECRET')
  let encryptionKeyText = text(env, 'ENCRYPTION_KEY')
  if (production) {
    if (jwtSecret === undefined || jwtSecret.length < 32) {
      throw new ConfigError('JWT_SECRET of at least 32 characters is required when NODE_ENV=production')
    }
    if (encryptionKeyText === undefined) {
      throw new ConfigError('ENCRYPTION_KEY is required when NODE_ENV=production')
    }
  } else if (jwtSecret === undefined || encryptionKeyText === undefined) {
    const secrets = devSecrets(dataDir)
    jwtSecret ??= secrets.jwtSecret
    encryptionKeyText ??= secrets.encryptionKey
  }
  if (jwtSecret.length < 16) throw new ConfigError('JWT_SECRET must be at least 16 characters')

  const encryptionKey = Buffer.from(encryptionKeyText, 'base64')
  if (encryptionKey.length !== 32) {
    throw new ConfigError('ENCRYPTION_KEY must be 32 bytes, base64-encoded')
  }

  const adminEmail = (text(env, 'ADMIN_EMAIL') ?? 'admin@example.com').toLowerCase()
  if (!/^[^\s@]+@[^\s@]+$/.test(adminEmail)) throw new ConfigError('ADMIN_EMAIL must be an email address')
  const adminPassword = env.ADMIN_PASSWORD ?? 'admin'
  if (production && adminPassword === 'admin') {
    throw new ConfigError('ADMIN_PASSWORD must be changed from its default when NODE_ENV=production')
  }
  if (adminPassword.length === 0) throw new ConfigError('ADMIN_PASSWORD must not be empty')

  const logLevel = text(env, 'LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`)

  return {
    nodeEnv,
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: text(env, 'HOST') ?? '0.0.0.0',
    databaseUrl: url(env, 'DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/switchboard', ['postgres:', 'postgresql:']),
    redisUrl: url(env, 'REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']),
    queuePrefix: text(env, 'QUEUE_PREFIX') ?? 'switchboard',
    jwtSecret,
    adminEmail,
    adminPassword,
    chat: {
      apiUrl: url(env, 'CHAT_API_URL', 'https://graph.facebook.com/v21.0', ['http:', 'https:']),
      accessToken: text(env, 'CHAT_ACCESS_TOKEN'),
      phoneNumberId: text(env, 'CHAT_PHONE_NUMBER_ID'),
      businessAccountId: text(env, 'CHAT_BUSINESS_ACCOUNT_ID'),
      appSecret: text(env, 'CHAT_APP_SECRET'),
      verifyToken: text(env, 'CHAT_VERIFY_TOKEN')
    },
    workerConcurrency: integer(env, 'WORKER_CONCURRENCY', 50, 1, 1000),
    encryptionKey,
    httpRequestAllowPrivate: boolean(env, 'HTTP_REQUEST_ALLOW_PRIVATE'),
    limits: {
      workflowMaxNodes: integer(env, 'WORKFLOW_MAX_NODES', DEFAULT_LIMITS.workflowMaxNodes, 1, 100_000),
      cronMinIntervalSeconds: integer(env, 'CRON_MIN_INTERVAL_SECONDS', DEFAULT_LIMITS.cronMinIntervalSeconds, 1, 86_400),
      eventFanoutMax: integer(env, 'EVENT_FANOUT_MAX', DEFAULT_LIMITS.eventFanoutMax, 1, 1_000_000)
    },
    trustProxy: trustProxy(env),
    logLevel,
    dataDir
  }
}
