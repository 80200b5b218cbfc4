import { readdirSync, readFileSync } from 'node:fs'
import { Redis } from 'ioredis'
import type { Database } from '@switchboard/core/db'
import { REDIS_URL } from '@switchboard/testing/database'
import type { BenchProcess } from './processes.ts'
import { metric, type Metric } from './report.ts'

/** Clock ticks a second of /proc/<pid>/stat's utime and stime (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100

/** User plus system CPU of one process so far, in ms; 0 once it is gone. */
function cpuMsOf (pid: number): number {
  try {
    // The command name is in parentheses and may hold spaces: the fields after it are counted from its end.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 1000 / TICKS_PER_SECOND
  } catch {
    return 0
  }
}

/** The CPU of every process whose command is `name` (PostgreSQL's server and backends, Redis). */
function cpuMsOfCommand (name: string): number {
  let total = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === name) total += cpuMsOf(Number(entry))
    } catch {
      // Gone between the listing and the read.
    }
  }
  return total
}

interface Reading { cpu: Record<string, number>, walLsn: string, redisCommands: number }

/**
 * Where the time of a measured phase goes, per run: the CPU of each process taking part (the api
 * and worker, every PostgreSQL and Redis process on the machine, the load generator), the WAL
 * PostgreSQL wrote and the commands Redis processed. The stores are the machine's shared ones, so
 * the figures hold only on a quiet machine, as every figure of the bench.
 */
export async function costMeter (sql: Database['sql'], processes: BenchProcess[]): Promise<{ stop: (runs: number) => Promise<Metric[]> }> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
  await redis.connect()
  const read = async (): Promise<Reading> => {
    const [[{ lsn }], info] = await Promise.all([sql<Array<{ lsn: string }>>`select pg_current_wal_lsn()::text as lsn`, redis.info('stats')])
    const own = process.cpuUsage()
    const cpu: Record<string, number> = { 'load generator': (own.user + own.system) / 1000 }
    for (const child of processes) cpu[child.name] = cpuMsOf(child.child.pid ?? 0)
    cpu.PostgreSQL = cpuMsOfCommand('postgres')
    cpu.Redis = cpuMsOfCommand('redis-server')
    return { cpu, walLsn: lsn, redisCommands: Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? Number.NaN) }
  }
  const before = await read()
  return {
    stop: async (runs) => {
      const after = await read()
      redis.disconnect()
      const [{ bytes }] = await sql<Array<{ bytes: number }>>`select pg_wal_lsn_diff(${after.walLsn}, ${before.walLsn})::float8 as bytes`
      const perRun = (value: number): number => runs === 0 ? Number.NaN : value / runs
      return [
        ...Object.keys(after.cpu).map((name) => metric(`CPU per run: ${name}`, perRun(after.cpu[name]! - before.cpu[name]!), 'ms')),
        metric('WAL per run', perRun(bytes) / 1024, 'KB'),
        metric('Redis commands per run', perRun(after.redisCommands - before.redisCommands), '')
      ]
    }
  }
}
