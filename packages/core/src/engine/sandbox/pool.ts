/**
 * Runs workflow authors' JavaScript off the caller's event loop: a pool of
 * worker threads (thread.ts), each running one job at a time in QuickJS.
 * Threads start at the first run and are reused. While every thread is busy,
 * jobs wait in their owner's line, and the owners take turns (README, Code):
 * one owner's queue of endless scripts does not stand in front of another's.
 * In an owner's line, the jobs of the run that first ran code here go first
 * (`rankOf`), so the threads finish the runs they started before they take
 * up the next runs' code: few runs hold their results in memory at once.
 */
import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads'
import { MAX_CACHED_USERS, OWNER_RECENT_MS, ownerCap } from '../../queues/fair-share.ts'
import { entriesOf, entryBytes, isEntries, type EntryReply, type InputEntries } from './input.ts'
import { codeSizeError, cpuTimeError, DEFAULT_CODE_SANDBOX_LIMITS, type CodeSandboxLimits } from './limits.ts'
import type { ReadRequest, ThreadData, ThreadJob, ThreadMessage } from './thread.ts'

export interface CodeLogLine {
  level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR'
  message: string
}

export type CodeRunResult =
  | { ok: true, output: unknown, logs: CodeLogLine[] }
  | { ok: false, error: string, line?: number, logs: CodeLogLine[] }

/** Why code does not compile: the line in the author's code and QuickJS's message. */
export interface CodeSyntaxError {
  line: number
  message: string
}

export interface CodeSandboxPool {
  /**
   * Runs `code` as the body of an async function of `input` (plain JSON);
   * what it returns is the output. An object (a run's result) is given as
   * a read-only view whose entries the code reads from this thread when it
   * first touches them (input.ts): its entries must not change while the
   * code runs, and each entry's JSON is kept with the object for later
   * runs on it. Anything else is copied in whole. Every failure of the
   * code is a result with ok: false; the promise rejects only when
   * `signal` aborts (with its reason), the pool is closed, or
   * JSON.stringify throws on an input that is not an object.
   * `owner`: whose code it is, for the threads' fair share.
   */
  run: (code: string, input: unknown, options?: { signal?: AbortSignal, owner?: string }) => Promise<CodeRunResult>
  /**
   * The save-time check: compiles `code` wrapped exactly as `run` runs it, on a thread like a run,
   * without running any of it; null when it compiles. Code over codeMaxBytes is refused unread.
   */
  check: (code: string) => Promise<CodeSyntaxError | null>
  /** Ends every thread; runs not finished reject. */
  close: () => Promise<void>
}

/**
 * How long past cpuMs a thread may stay silent before it is ended. QuickJS
 * checks the deadline between operations, and some operations are long:
 * throwing an error from 1,000 calls deep builds a 1,000-frame stack, and
 * 10,000 of those pass between two checks.
 */
const WATCHDOG_MARGIN_MS = 1000

const EXTENSION = extname(fileURLToPath(import.meta.url))
/** thread.js next to pool.js in the build (dist/), thread.ts next to pool.ts when run from source. */
const THREAD_URL = new URL(`./thread${EXTENSION}`, import.meta.url)

function startWorker (workerData: ThreadData): Worker {
  const transferList = [workerData.replies]
  if (EXTENSION !== '.ts') return new Worker(THREAD_URL, { workerData, transferList })
  // Run from source, with tsx (the tap config in package.json): on Node 20
  // tsx registers its loader on the main thread only, although a worker
  // inherits `--import=tsx`, so the thread registers it before loading
  // thread.ts.
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(THREAD_URL.href)}) })`
  return new Worker(bootstrap, { eval: true, workerData, transferList })
}

interface Job {
  id: number
  /** Its place in its owner's line (`rankOf`): lower goes first, equal ones in the order they came. */
  rank: number
  /** Whose code it is ('' when nobody's: the save-time check). */
  owner: string
  code: string
  input: { json: string } | { entries: InputEntries }
  compileOnly?: true
  resolve: (result: CodeRunResult) => void
  reject: (reason: unknown) => void
  /** Removes the abort listener, if there is a signal. */
  release: () => void
}

interface Thread {
  worker: Worker
  /** Where reads of the job's entries are answered (thread.ts, requestEntry). */
  replies: MessagePort
  /** Counts the answers: the thread sleeps on it until one comes. */
  answered: Int32Array
  /** thread.ts has loaded QuickJS and takes jobs. */
  ready: boolean
  job?: Job
  watchdog?: NodeJS.Timeout
}

/**
 * `share`: WORKER_USER_SHARE, the threads one owner's code may hold while other owners ran code
 * here lately (README, Quotas: Fair scheduling); 1 (the default) lets any owner take every thread.
 */
export function createCodeSandboxPool ({ threads: size, limits = DEFAULT_CODE_SANDBOX_LIMITS, share = 1 }: { threads: number, limits?: CodeSandboxLimits, share?: number }): CodeSandboxPool {
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`A code sandbox pool needs at least one thread, not ${size}`)
  const threads = new Set<Thread>()
  /** The jobs waiting for a thread, per owner, by rank (`enqueue`); the owners in the order of their turns. */
  const waiting = new Map<string, Job[]>()
  /** Threads each owner's jobs hold. */
  const holding = new Map<string, number>()
  /** When each owner last submitted code, for the others' fair share. */
  const lastSeen = new Map<string, number>()
  const cap = ownerCap(size, share)
  /** Each run's rank: the id of the first job given its result (the object the code reads as `input`). */
  const runRanks = new WeakMap<object, number>()
  let nextId = 1
  let closed = false

  /**
   * A job's rank: the first job of its run's, for a job on a run's result, or its own id. With
   * every job in submission order, 20 runs of 18 code nodes each went through their code in step,
   * all 20 holding their results until the last ended; ranked, they end one after another, and
   * the worker's live heap grew by 34 MB instead of 116 MB (docs/decisions.md). The jobs of one
   * run come one after another, so a run does not hold more of its owner's threads by going first.
   */
  function rankOf (id: number, input: Job['input']): number {
    if ('json' in input) return id
    const { source } = input.entries
    const rank = runRanks.get(source) ?? id
    runRanks.set(source, rank)
    return rank
  }

  /** Places `job` in its owner's line, after the jobs of lower or equal rank. */
  function enqueue (job: Job): void {
    const queued = waiting.get(job.owner)
    if (queued === undefined) {
      waiting.set(job.owner, [job])
      return
    }
    const after = queued.findIndex((other) => other.rank > job.rank)
    queued.splice(after === -1 ? queued.length : after, 0, job)
  }

  /** The job no longer holds a thread (ended, aborted) or waits for one. */
  function settle (job: Job): void {
    job.release()
    const queued = waiting.get(job.owner) ?? []
    if (queued.includes(job)) {
      queued.splice(queued.indexOf(job), 1)
      if (queued.length === 0) waiting.delete(job.owner)
      return
    }
    const held = (holding.get(job.owner) ?? 0) - 1
    if (held > 0) holding.set(job.owner, held)
    else holding.delete(job.owner)
  }

  function finish (job: Job, result: CodeRunResult): void {
    settle(job)
    job.resolve(result)
  }

  function fail (job: Job, reason: unknown): void {
    settle(job)
    job.reject(reason)
  }

  /** Whether another owner submitted code lately (waiting and running code included). */
  function othersActive (owner: string): boolean {
    const since = Date.now() - OWNER_RECENT_MS
    for (const [other, at] of lastSeen) {
      if (at < since) lastSeen.delete(other)
      else if (other !== owner) return true
    }
    return false
  }

  /**
   * The next job to get a thread: the first waiting owner in turn that holds fewer threads than its
   * share, or any while no other owner ran code lately. That owner's turn goes to the back.
   */
  function nextJob (): Job | undefined {
    for (const [owner, jobs] of waiting) {
      if ((holding.get(owner) ?? 0) >= cap && othersActive(owner)) continue
      const job = jobs.shift()!
      waiting.delete(owner)
      if (jobs.length > 0) waiting.set(owner, jobs)
      holding.set(owner, (holding.get(owner) ?? 0) + 1)
      return job
    }
    return undefined
  }

  /** Ends a thread that is stuck, failed or whose job was aborted; the next dispatch starts another. */
  function retire (thread: Thread): void {
    threads.delete(thread)
    clearTimeout(thread.watchdog)
    thread.replies.close()
    thread.worker.terminate().catch(() => {})
  }

  function send (thread: Thread, job: Job): void {
    const input = 'json' in job.input ? job.input : { keys: job.input.entries.keys }
    const message: ThreadJob = { id: job.id, code: job.code, input, limits, ...(job.compileOnly === true && { compileOnly: true }) }
    thread.worker.postMessage(message)
    thread.watchdog = setTimeout(() => {
      retire(thread)
      finish(job, { ok: false, error: cpuTimeError(limits), logs: [] })
      dispatch()
    }, limits.cpuMs + WATCHDOG_MARGIN_MS)
  }

  /** The code of the thread's job read an entry of its input: the entry's bytes, shared (input.ts). */
  function answer (thread: Thread, { id, index, seq }: ReadRequest): void {
    const job = thread.job
    // A thread whose job ended (aborted, timed out) is ended too: nobody waits for the answer.
    if (job?.id !== id || 'json' in job.input) return
    const { entries } = job.input
    let reply: EntryReply
    if (!Number.isInteger(index) || index < 0 || index >= entries.keys.length) {
      reply = { seq, error: 'input has no such entry' }
    } else {
      try {
        reply = { seq, bytes: entryBytes(entries, index) }
      } catch (error) {
        reply = { seq, error: `input.${entries.keys[index]} is not JSON: ${String(error)}` }
      }
    }
    thread.replies.postMessage(reply)
    Atomics.add(thread.answered, 0, 1)
    Atomics.notify(thread.answered, 0)
  }

  function receive (thread: Thread, message: ThreadMessage): void {
    if (!threads.has(thread)) return
    if (message.type === 'ready') {
      thread.ready = true
      if (thread.job !== undefined) send(thread, thread.job)
      return
    }
    if (message.type === 'read') {
      answer(thread, message)
      return
    }
    const job = thread.job
    if (job === undefined || job.id !== message.id) return
    thread.job = undefined
    if (message.broken === true) {
      retire(thread)
    } else {
      clearTimeout(thread.watchdog)
      // An idle thread does not keep the process alive.
      thread.worker.unref()
    }
    finish(job, message.result)
    dispatch()
  }

  /** A thread that failed or exited on its own: its job fails, and another thread takes the queue. */
  function lost (thread: Thread, why: string): void {
    if (!threads.has(thread)) return
    retire(thread)
    if (thread.job !== undefined) finish(thread.job, { ok: false, error: why, logs: [] })
    dispatch()
  }

  function startThread (): Thread {
    const { port1: replies, port2 } = new MessageChannel()
    const answered = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT)
    const thread: Thread = { worker: startWorker({ memoryBytes: limits.memoryBytes, replies: port2, answered }), replies, answered: new Int32Array(answered), ready: false }
    thread.worker.on('message', (message: ThreadMessage) => { receive(thread, message) })
    thread.worker.on('error', (error) => { lost(thread, `The code sandbox thread failed: ${error.message}`) })
    thread.worker.on('exit', (code) => { lost(thread, `The code sandbox thread exited with code ${code}`) })
    threads.add(thread)
    return thread
  }

  function dispatch (): void {
    while (waiting.size > 0) {
      let thread = [...threads].find((candidate) => candidate.job === undefined)
      if (thread === undefined && threads.size >= size) return
      const job = nextJob()
      if (job === undefined) return
      thread ??= startThread()
      thread.job = job
      thread.worker.ref()
      if (thread.ready) send(thread, job)
    }
  }

  function abort (job: Job, reason: unknown): void {
    for (const thread of threads) {
      if (thread.job === job) retire(thread)
    }
    fail(job, reason)
    dispatch()
  }

  /** Queues a job: `code` run on `input`, or only compiled. */
  async function submit (code: string, input: Job['input'], { signal, compileOnly, owner = '' }: { signal?: AbortSignal, compileOnly?: true, owner?: string }): Promise<CodeRunResult> {
    if (closed) throw new Error('The code sandbox pool is closed')
    signal?.throwIfAborted()
    const tooLarge = codeSizeError(code, limits)
    if (tooLarge !== undefined) return { ok: false, error: tooLarge, logs: [] }
    return await new Promise<CodeRunResult>((resolve, reject) => {
      const id = nextId++
      const job: Job = { id, rank: rankOf(id, input), owner, code, input, ...(compileOnly === true && { compileOnly }), resolve, reject, release: () => {} }
      if (signal !== undefined) {
        const onAbort = (): void => { abort(job, signal.reason) }
        signal.addEventListener('abort', onAbort, { once: true })
        job.release = () => { signal.removeEventListener('abort', onAbort) }
      }
      enqueue(job)
      if (lastSeen.size >= MAX_CACHED_USERS) lastSeen.clear()
      lastSeen.set(owner, Date.now())
      dispatch()
    })
  }

  return {
    run: async (code, input, options = {}) => await submit(code, isEntries(input) ? { entries: entriesOf(input) } : { json: JSON.stringify(input) ?? 'null' }, options),
    check: async (code) => {
      const compiled = await submit(code, { json: 'null' }, { compileOnly: true })
      if (compiled.ok) return null
      // The thread says where, as a run's error does: the check gives the line on its own.
      return { line: compiled.line ?? 1, message: compiled.error.replace(/ \(line \d+\)$/, '') }
    },
    close: async () => {
      closed = true
      const error = new Error('The code sandbox pool is closed')
      for (const job of [...waiting.values()].flat()) fail(job, error)
      const ending = [...threads].map(async (thread) => {
        threads.delete(thread)
        clearTimeout(thread.watchdog)
        thread.replies.close()
        if (thread.job !== undefined) fail(thread.job, error)
        await thread.worker.terminate()
      })
      await Promise.all(ending)
    }
  }
}
