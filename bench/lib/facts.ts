import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { cpus, loadavg, release, totalmem } from 'node:os'
import { createDatabase } from '@switchboard/core/db'
import { createProducerConnection } from '@switchboard/core/queues'
import { BASE_DATABASE_URL, REDIS_URL } from '@switchboard/testing/database'
import { ROOT, type Mode } from './processes.ts'

const POSTGRES_SETTINGS = ['server_version', 'fsync', 'synchronous_commit', 'full_page_writes', 'wal_level', 'shared_buffers', 'max_connections']

async function postgresFacts (): Promise<Record<string, string>> {
  const { sql, close } = createDatabase(BASE_DATABASE_URL, { max: 1 })
  try {
    const rows = await sql<Array<{ name: string, setting: string }>>`select name, current_setting(name) as setting from unnest(${POSTGRES_SETTINGS}::text[]) as name`
    return Object.fromEntries(rows.map(({ name, setting }) => [name, setting]))
  } finally {
    await close()
  }
}

async function redisFacts (): Promise<Record<string, string>> {
  const redis = createProducerConnection(REDIS_URL, { enableOfflineQueue: true })
  try {
    const info = await redis.info('server')
    const facts: Record<string, string> = { version: /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown' }
    for (const name of ['appendonly', 'appendfsync', 'save']) {
      // CONFIG may be renamed or refused on managed servers: the fact is then unknown, not an error.
      const answer = await redis.config('GET', name).catch(() => []) as string[]
      facts[name] = answer[1] === undefined ? 'unknown' : answer[1] === '' ? '""' : answer[1]
    }
    return facts
  } finally {
    redis.disconnect()
  }
}

function gitRevision (): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain'], { cwd: ROOT, encoding: 'utf8' }).trim() !== ''
    return dirty ? `${commit} (uncommitted changes)` : commit
  } catch {
    return 'unknown'
  }
}

/** What the figures depend on: the machine, the stores and how durable they are, how the processes ran. */
export async function machineFacts (options: { mode: Mode, logLevel: string, connections: number, quick: boolean, scale: boolean }): Promise<Record<string, string>> {
  const postgres = await postgresFacts()
  const redis = await redisFacts()
  const cpu = cpus()
  const autocannonVersion = (createRequire(import.meta.url)('autocannon/package.json') as { version: string }).version
  return {
    CPU: `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown'}`,
    Memory: `${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    'Load average at start': loadavg().map((load) => load.toFixed(2)).join(' '),
    Kernel: release(),
    Node: process.version,
    PostgreSQL: `${postgres.server_version} (fsync ${postgres.fsync}, synchronous_commit ${postgres.synchronous_commit}, full_page_writes ${postgres.full_page_writes}, wal_level ${postgres.wal_level}, shared_buffers ${postgres.shared_buffers}, max_connections ${postgres.max_connections})`,
    Redis: `${redis.version} (appendonly ${redis.appendonly}, appendfsync ${redis.appendfsync}, save ${redis.save})`,
    'Load generator': `autocannon ${autocannonVersion}, in the bench process`,
    Processes: `${options.mode === 'built' ? 'built (dist/)' : 'from sources (tsx)'}, LOG_LEVEL=${options.logLevel}, ${options.connections} connections`,
    Run: `${options.quick ? 'quick' : 'full'}${options.scale ? ', --scale' : ''}, commit ${gitRevision()}`
  }
}
