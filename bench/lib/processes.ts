import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { builtEntry, sourceEntryArgs } from '@switchboard/testing/entries'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** How a TypeScript entry of the repository is started: from its sources (tsx) or from `dist/` after `pnpm build`. */
export type Mode = 'sources' | 'built'

const READY_WITHIN_MS = 60_000

/** Every process started and not yet exited: none outlives the bench, however it ends. */
const live = new Set<ChildProcess>()
process.once('exit', () => { for (const child of live) child.kill('SIGKILL') })

export interface BenchProcess {
  name: string
  child: ChildProcess
  /** Resident set size now, in MB, read from /proc. */
  rssMb: () => number
  /** CPU time used so far, user and system, in seconds, read from /proc. */
  cpuSeconds: () => number
  /** The end of what the process printed, for error messages. */
  logTail: () => string
  stop: () => Promise<void>
}

let ticksPerSecond: number | undefined
/** The unit of the CPU times in /proc/<pid>/stat (USER_HZ), asked once. */
function clockTicks (): number {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }))
  return ticksPerSecond
}

/** `apps/api/src/server.ts` → `apps/api/dist/server.js` for built runs. */
function entryArgs (entry: string, mode: Mode): string[] {
  return mode === 'built' && entry.startsWith('apps/') ? [builtEntry(entry)] : sourceEntryArgs(entry)
}

async function answers (url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).ok
  } catch {
    return false
  }
}

/**
 * Starts `entry` (a path from the repository root) with its output in a log file of
 * its own, not piped through this process (which drives the load), and waits until
 * `readyUrl` answers 200.
 */
export async function launch (options: { name: string, entry: string, env: Record<string, string>, readyUrl: string, logDir: string, mode: Mode }): Promise<BenchProcess> {
  const logFile = join(options.logDir, `${options.name}.log`)
  const fd = openSync(logFile, 'a')
  const child = spawn(process.execPath, entryArgs(options.entry, options.mode), {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', fd, fd]
  })
  closeSync(fd)
  live.add(child)
  const exited = once(child, 'exit')
  child.once('exit', () => { live.delete(child) })
  const logTail = (): string => {
    try {
      return readFileSync(logFile, 'utf8').slice(-4000)
    } catch {
      return ''
    }
  }
  const running = (): boolean => child.exitCode === null && child.signalCode === null
  const managed: BenchProcess = {
    name: options.name,
    child,
    rssMb: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024
    },
    cpuSeconds: () => {
      // The fields after the command name (which may hold spaces or parentheses), from the 3rd: utime is the 14th, stime the 15th.
      const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      return (Number(fields[11]) + Number(fields[12])) / clockTicks()
    },
    logTail,
    stop: async () => {
      if (!running()) return
      child.kill('SIGKILL')
      await exited
    }
  }
  const deadline = Date.now() + READY_WITHIN_MS
  while (!await answers(options.readyUrl)) {
    if (!running()) throw new Error(`${options.name} exited with ${child.exitCode ?? child.signalCode} before it was ready:\n${logTail()}`)
    if (Date.now() > deadline) {
      await managed.stop()
      throw new Error(`${options.name} was not ready within ${READY_WITHIN_MS / 1000}s:\n${logTail()}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return managed
}
