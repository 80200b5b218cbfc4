import { readdirSync, readFileSync } from 'node:fs'
import type { Database } from '@switchboard/core/db'
import { createProducerConnection } from '@switchboard/core/queues'
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

interface Reading { cpu: Record<string, number>, wal: { records: number, fullPages: number, bytes: number, commits: number, lsn: string }, redisCommands: number }

/** What a measured phase cost per run, and its WAL records per run by kind ("Btree/INSERT_LEAF 20.1", most first). */
export interface Costs { metrics: Metric[], walKinds: string }

/**
 * Where the time of a measured phase goes, per run: the CPU of each process taking part (the api
 * and worker, every PostgreSQL and Redis process on the machine, the load generator), the WAL
 * PostgreSQL wrote and the commands Redis processed. The stores are the machine's shared ones, so
 * the figures hold only on a quiet machine, as every figure of the bench.
 */
export async function costMeter (sql: Database['sql'], processes: BenchProcess[]): Promise<{ stop: (runs: number) => Promise<Costs> }> {
  const redis = createProducerConnection(REDIS_URL, { enableOfflineQueue: true })
  const read = async (): Promise<Reading> => {
    // The whole server's: WAL records, full-page images (the first change of a page after a checkpoint), bytes, and transactions (reads included).
    const [[wal], info] = await Promise.all([
      sql<Array<Reading['wal']>>`select wal_records::float8 as records, wal_fpi::float8 as "fullPages", wal_bytes::float8 as bytes,
        (select sum(xact_commit)::float8 from pg_stat_database) as commits, pg_current_wal_lsn()::text as lsn from pg_stat_wal`,
      redis.info('stats')
    ])
    const own = process.cpuUsage()
    const cpu: Record<string, number> = { 'load generator': (own.user + own.system) / 1000 }
    for (const child of processes) cpu[child.name] = cpuMsOf(child.child.pid ?? 0)
    cpu.PostgreSQL = cpuMsOfCommand('postgres')
    cpu.Redis = cpuMsOfCommand('redis-server')
    return { cpu, wal: wal!, redisCommands: Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? Number.NaN) }
  }
  const before = await read()
  return {
    stop: async (runs) => {
      const after = await read()
      redis.disconnect()
      const perRun = (value: number): number => runs === 0 ? Number.NaN : value / runs
      // pg_walinspect (PostgreSQL 15's contrib) reads the records back by kind: which rows and indexes a run writes.
      await sql`create extension if not exists pg_walinspect`
      const kinds = await sql<Array<{ kind: string, count: number }>>`
        select "resource_manager/record_type" as kind, count::float8 as count
        from pg_get_wal_stats(${before.wal.lsn}::pg_lsn, ${after.wal.lsn}::pg_lsn, true) where count > 0 order by count desc limit 10`
      const metrics = [
        ...Object.keys(after.cpu).map((name) => metric(`CPU per run: ${name}`, perRun(after.cpu[name]! - before.cpu[name]!), 'ms')),
        metric('WAL per run', perRun(after.wal.bytes - before.wal.bytes) / 1024, 'KB'),
        metric('WAL records per run', perRun(after.wal.records - before.wal.records), ''),
        metric('WAL full-page images per run', perRun(after.wal.fullPages - before.wal.fullPages), ''),
        metric('PostgreSQL transactions per run', perRun(after.wal.commits - before.wal.commits), ''),
        metric('Redis commands per run', perRun(after.redisCommands - before.redisCommands), '')
      ]
      return { metrics, walKinds: kinds.map(({ kind, count }) => `${kind} ${perRun(count).toFixed(1)}`).join(', ') }
    }
  }
}
