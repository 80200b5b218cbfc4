/**
 * The worker-thread script of the code sandbox pool (pool.ts). Each job runs
 * in a fresh QuickJS runtime and context, so nothing a run did (a polluted
 * Object.prototype, a global) is seen by the next; a fresh runtime and
 * context cost about 0.2 ms. QuickJS's bare context has no require, import,
 * process, timers, network or file system: the code reaches the host only
 * through the console installed below and the reads of its `input` (input.ts).
 */
import { constants, setPriority } from 'node:os'
import { parentPort, receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads'
import { newQuickJSWASMModule, newVariant, RELEASE_SYNC, type CustomizeVariantOptions, type QuickJSHandle } from 'quickjs-emscripten'
import type { EntryReply } from './input.ts'
import { cpuTimeError, memoryError, outputSizeError, type CodeSandboxLimits } from './limits.ts'
import type { CodeLogLine } from './pool.ts'
import { CODE_FILENAME, COMPILE_STACK_BYTES, compileErrorMessage, lineInCode, wrapCode } from './wrap.ts'

export interface ThreadJob {
  id: number
  code: string
  /**
   * The input: JSON text parsed inside the sandbox, or the keys of the run's entries, which the
   * code reads one at a time through the pool (`ReadRequest`).
   */
  input: { json: string } | { keys: string[] }
  limits: CodeSandboxLimits
  /** Compile the code without running any of it (the save-time check): ok, or why it does not compile. */
  compileOnly?: true
}

/** What the pool gives the thread when it starts it. */
export interface ThreadData {
  /** The largest memoryBytes of the jobs it will send. */
  memoryBytes: number
  /** Where the pool answers reads of entries (EntryReply), read synchronously while QuickJS waits. */
  replies: MessagePort
  /** An Int32 the pool adds 1 to after each answer, which the thread waits on. */
  answered: SharedArrayBuffer
}

/** The code read entry `index` of its job's input: the pool answers on `replies`, with `seq`. */
export interface ReadRequest { type: 'read', id: number, index: number, seq: number }

export type ThreadResult =
  | { ok: true, output: unknown, logs: CodeLogLine[] }
  | { ok: false, error: string, line?: number, logs: CodeLogLine[] }

/** `broken`: the thread's QuickJS instance is unusable after this job, and the pool must end the thread. */
export type ThreadMessage = { type: 'ready' } | ReadRequest | { type: 'result', id: number, result: ThreadResult, broken?: true }

type Failure = Extract<ThreadResult, { ok: false }>
type Outcome = { ok: true, output: unknown } | Omit<Failure, 'logs'>

/**
 * QuickJS's stack limit while the code runs: about 1,300 nested calls. A
 * larger one lets QuickJS use up this thread's own 4 MiB stack before it
 * stops (JSON.stringify of a deeply nested value is the first to).
 */
const RUN_STACK_BYTES = 256 * 1024

/**
 * Once the code has ended with an error, describing the error runs in the
 * sandbox too (it may be any value, with getters): with a budget of its own,
 * since the code may have used all of its time or memory.
 */
const DESCRIBE_MS = 100
const DESCRIBE_MEMORY_BYTES = 1024 * 1024

/** What a write to `input` throws (README, Code). */
const READ_ONLY = 'input is read-only: build the output in an object of your own'

/**
 * Evaluated before the author's code, so it holds the real JSON functions
 * whatever the code later does to the globals. Its functions return JSON
 * text or strings only, which is all the host reads out of the sandbox
 * besides log lines.
 *
 * `view` is the run as the code's `input`: a frozen object with a getter per
 * entry, which reads the entry's JSON text from the host (`read`) and parses
 * it at its first use, so that keys, `in` and JSON.stringify work as on a
 * plain object and only what the code touches is copied in. It is seen
 * through a proxy whose every change (a set, a delete, a definition or a
 * prototype that is not already so) throws the same TypeError. What an
 * entry holds is the code's own copy.
 */
const PRELUDE = String.raw`(function (emit, maxChars, readOnly) {
  'use strict'
  const { parse, stringify } = JSON
  const { defineProperty, freeze } = Object
  const { apply, defineProperty: define, setPrototypeOf } = Reflect
  const { repeat } = String.prototype
  const ErrorType = Error
  const TypeErrorType = TypeError
  const ProxyType = Proxy
  const cut = (text) => text.length > maxChars ? text.slice(0, maxChars) : text
  function show (value) {
    if (typeof value === 'string') return value
    try {
      if (value instanceof ErrorType) return String(value)
      const json = stringify(value)
      if (json !== undefined) return json
    } catch {}
    try { return String(value) } catch { return typeof value }
  }
  function log (level) {
    return function (...values) {
      let line = ''
      for (let i = 0; i < values.length; i++) line += (i > 0 ? ' ' : '') + show(values[i])
      emit(level, cut(line), line.length)
    }
  }
  Object.defineProperty(globalThis, 'console', {
    value: { debug: log('DEBUG'), log: log('INFO'), info: log('INFO'), warn: log('WARN'), error: log('ERROR') },
    writable: true,
    configurable: true
  })
  function view (keysJson, read) {
    const input = {}
    const keys = parse(keysJson)
    for (let index = 0; index < keys.length; index++) {
      let value
      let loaded = false
      defineProperty(input, keys[index], {
        get () {
          if (!loaded) {
            value = parse(read(index))
            loaded = true
          }
          return value
        },
        enumerable: true
      })
    }
    const refuse = () => { throw new TypeErrorType(readOnly) }
    return new ProxyType(freeze(input), {
      __proto__: null,
      set: refuse,
      deleteProperty: refuse,
      defineProperty: (target, key, descriptor) => define(target, key, descriptor) || refuse(),
      setPrototypeOf: (target, prototype) => setPrototypeOf(target, prototype) || refuse()
    })
  }
  return [
    async (body, input) => body(input),
    (output) => stringify(output),
    (error) => {
      if (!(error instanceof ErrorType)) return stringify(['', cut(typeof error === 'string' ? stringify(error) : show(error)), 0])
      const at = /code\.js:(\d+)/.exec(String(error.stack))
      return stringify([cut(String(error.name)), cut(String(error.message)), at === null ? 0 : Number(at[1])])
    },
    parse,
    view,
    // Room for the text of an entry of this many bytes, taken from QuickJS's memory and given back.
    (bytes) => apply(repeat, '\u0100', [bytes]).length
  ]
})`

const NEVER_SETTLED = 'Code awaited something that never finished: there are no timers or network requests in the code step'

/** Log lines as the code writes them, at most logMaxLines, then one line saying how many more were dropped. */
function logCollector ({ logMaxLines }: CodeSandboxLimits): { add: (line: CodeLogLine, length: number) => void, lines: () => CodeLogLine[] } {
  const lines: CodeLogLine[] = []
  let dropped = 0
  return {
    add: (line, length) => {
      if (lines.length === logMaxLines) {
        dropped++
        return
      }
      const cut = length - line.message.length
      lines.push(cut > 0 ? { level: line.level, message: `${line.message}… [${cut} more characters cut]` } : line)
    },
    lines: () => dropped === 0 ? lines : [...lines, { level: 'WARN', message: `${dropped} more log lines dropped (at most ${logMaxLines} are kept)` }]
  }
}

/** The part of WebAssembly used here: its types are in lib.dom, which the build (tsconfig.build.json) leaves out. */
interface WasmMemory { grow: (pages: number) => number }
declare const WebAssembly: { Memory: new (descriptor: { initial: number, maximum: number }) => WasmMemory }

/**
 * QuickJS's memory limit does not count ArrayBuffers (`new Uint8Array(8 <<
 * 20)` in a loop goes past it by gigabytes), so the WebAssembly memory of
 * this thread's QuickJS has a maximum of its own: the limit plus the 16 MiB
 * the module starts with (its stack and static data). Allocations past it
 * fail in QuickJS as out of memory. The memory never shrinks: a thread keeps
 * its high-water mark, at most this maximum.
 */
const WASM_PAGE_BYTES = 64 * 1024
const WASM_INITIAL_BYTES = 16 * 1024 * 1024
const { memoryBytes, replies, answered } = workerData as ThreadData
const wasmMemory = new WebAssembly.Memory({
  initial: WASM_INITIAL_BYTES / WASM_PAGE_BYTES,
  maximum: Math.ceil((memoryBytes + WASM_INITIAL_BYTES) / WASM_PAGE_BYTES)
})
/**
 * Whether the memory's last growth was refused, at its maximum. QuickJS then cannot allocate even
 * the error it would throw and throws null instead: with a refused growth, a thrown null is the
 * memory used up, not the author's `throw null`. The module grows the memory through this object.
 */
const growth = { refused: false }
const grow = wasmMemory.grow.bind(wasmMemory)
wasmMemory.grow = (pages) => {
  try {
    const before = grow(pages)
    growth.refused = false
    return before
  } catch (error) {
    growth.refused = true
    throw error
  }
}
const quickJS = await newQuickJSWASMModule(newVariant(RELEASE_SYNC, { wasmMemory: wasmMemory as CustomizeVariantOptions['wasmMemory'] }))

function run ({ id, code, input, limits, compileOnly }: ThreadJob): ThreadResult {
  const logs = logCollector(limits)
  const runtime = quickJS.newRuntime()
  runtime.setMemoryLimit(limits.memoryBytes)
  runtime.setMaxStackSize(COMPILE_STACK_BYTES)
  // QuickJS asks between operations whether to stop; `up` records that it was told to. The time
  // starts with the author's code, after the prelude: a thread's first run also compiles QuickJS's
  // WebAssembly, which on a busy machine took longer than a short CODE_CPU_MS.
  const time = { deadline: Infinity, up: false }
  runtime.setInterruptHandler(() => {
    if (Date.now() <= time.deadline) return false
    time.up = true
    return true
  })
  const context = runtime.newContext()
  // Every handle is freed before the context: QuickJS aborts on freeing a runtime that still has objects.
  const handles: QuickJSHandle[] = []
  const keep = (handle: QuickJSHandle): QuickJSHandle => {
    handles.push(handle)
    return handle
  }
  const call = (fn: QuickJSHandle, ...args: QuickJSHandle[]): { value: QuickJSHandle, error?: undefined } | { error: QuickJSHandle } => {
    const result = context.callFunction(fn, context.undefined, ...args)
    return result.error === undefined ? { value: keep(result.value) } : { error: keep(result.error) }
  }
  const item = (array: QuickJSHandle, index: number): QuickJSHandle => keep(context.getProp(array, index))

  const emit = keep(context.newFunction('emit', (level, message, length) => {
    logs.add({ level: context.getString(level) as CodeLogLine['level'], message: context.getString(message) }, context.getNumber(length))
  }))
  const prelude = context.evalCode(PRELUDE, 'prelude.js', { type: 'global' })
  const helpers = call(keep(context.unwrapResult(prelude)), emit, keep(context.newNumber(limits.logLineMaxChars)), keep(context.newString(READ_ONLY)))
  if (helpers.error !== undefined) throw new Error('The code sandbox prelude failed')
  const [runBody, toJson, describe, parseJson, view, reserve] = [0, 1, 2, 3, 4, 5].map((index) => item(helpers.value, index))

  /**
   * Entry `index` of the input as JSON text in QuickJS, for the view's getter: read from the pool
   * (input.ts), or the error the code's read throws. An entry larger than the memory limit is not
   * copied; a smaller one first takes room from QuickJS's own allocator, which fails as out of
   * memory within the limit, where the copy (a host allocation, which does not check) would not fit.
   */
  const read = keep(context.newFunction('read', (index) => {
    const reply = requestEntry(id, context.getNumber(index), time.deadline)
    if (reply === undefined) {
      time.up = true
      return { error: context.newError('interrupted') }
    }
    if ('error' in reply) return { error: context.newError({ name: 'TypeError', message: reply.error }) }
    const bytes = reply.bytes.byteLength
    if (bytes > limits.memoryBytes) return { error: context.newError({ name: 'InternalError', message: 'out of memory' }) }
    const room = context.callFunction(reserve, context.undefined, keep(context.newNumber(bytes)))
    if (room.error !== undefined) return { error: room.error }
    room.value.dispose()
    return context.newString(Buffer.from(reply.bytes).toString('utf8'))
  }))

  /** The code's error as the author should read it; `phase` says what the error interrupted. */
  function failure (error: QuickJSHandle, phase: 'compile' | 'run' | 'output'): Omit<Failure, 'logs'> {
    if (time.up) return { ok: false, error: cpuTimeError(limits) }
    time.deadline = Date.now() + DESCRIBE_MS
    runtime.setMemoryLimit(limits.memoryBytes + DESCRIBE_MEMORY_BYTES)
    const described = call(describe, error)
    if (described.error !== undefined || context.typeof(described.value) !== 'string') return { ok: false, error: 'Code failed with an error that could not be read' }
    const [name, message, reported] = JSON.parse(context.getString(described.value)) as [string, string, number]
    if ((name === 'InternalError' && message === 'out of memory') || (name === '' && message === 'null' && growth.refused)) return { ok: false, error: memoryError(limits) }
    const line = reported > 0 ? lineInCode(reported, code) : undefined
    let text = name === '' ? `Code threw ${message}` : message === 'stack overflow' ? 'Stack overflow: too much recursion' : `${name}: ${message}`
    if (phase === 'compile') text = compileErrorMessage(name, message, code, line ?? 1)
    if (phase === 'output') text = `Output is not JSON: ${text}`
    return line === undefined ? { ok: false, error: text } : { ok: false, error: `${text} (line ${line})`, line }
  }

  function evaluate (): Outcome {
    const compiled = context.evalCode(wrapCode(code), CODE_FILENAME, { type: 'global', compileOnly })
    if (compiled.error !== undefined) return failure(keep(compiled.error), 'compile')
    const body = keep(compiled.value)
    if (compileOnly === true) return { ok: true, output: null }
    runtime.setMaxStackSize(RUN_STACK_BYTES)
    const given = 'json' in input
      ? call(parseJson, keep(context.newString(input.json)))
      : call(view, keep(context.newString(JSON.stringify(input.keys))), read)
    if (given.error !== undefined) return failure(given.error, 'run')
    const started = call(runBody, body, given.value)
    if (started.error !== undefined) return failure(started.error, 'run')
    // The body is async: its awaits run as jobs, until none is left or time is up.
    while (runtime.hasPendingJob() && !time.up) {
      const jobs = runtime.executePendingJobs()
      if (jobs.error !== undefined) keep(jobs.error)
    }
    if (time.up) return { ok: false, error: cpuTimeError(limits) }
    const state = context.getPromiseState(started.value)
    if (state.type === 'pending') return { ok: false, error: NEVER_SETTLED }
    if (state.type === 'rejected') return failure(keep(state.error), 'run')
    const output = keep(state.value)
    const type = context.typeof(output)
    if (type === 'undefined') return { ok: true, output: null }
    // Serialized in the sandbox, and measured before it is copied out.
    const json = call(toJson, output)
    if (json.error !== undefined) return failure(json.error, 'output')
    if (context.typeof(json.value) !== 'string') return { ok: false, error: `Output is not JSON: it is a ${type}` }
    if (context.getNumber(keep(context.getProp(json.value, 'length'))) > limits.outputMaxBytes) return { ok: false, error: outputSizeError(limits) }
    const outputJson = context.getString(json.value)
    if (Buffer.byteLength(outputJson) > limits.outputMaxBytes) return { ok: false, error: outputSizeError(limits) }
    // Parsed here, not on the caller's event loop: the pool hands the value on as the thread
    // posts it, one copy on the caller's side instead of the text and its parse.
    return { ok: true, output: JSON.parse(outputJson) as unknown }
  }

  time.deadline = Date.now() + limits.cpuMs
  growth.refused = false
  const outcome = evaluate()
  for (const handle of handles.reverse()) handle.dispose()
  context.dispose()
  runtime.dispose()
  return { ...outcome, logs: logs.lines() }
}

// On Linux each thread has a priority of its own (elsewhere this would be the
// whole process's): the authors' code gives way to the caller's event loop
// when both want the CPU. Where the system refuses, the thread runs as is.
if (process.platform === 'linux') {
  try {
    setPriority(constants.priority.PRIORITY_BELOW_NORMAL)
  } catch {}
}

const port = parentPort
if (port === null) throw new Error('thread.ts runs as a worker thread of the code sandbox pool (pool.ts)')
const post = (message: ThreadMessage): void => { port.postMessage(message) }

const answers = new Int32Array(answered)
let lastSeq = 0

/**
 * Asks the pool for entry `index` of job `id`'s input and waits for its answer until `deadline`:
 * QuickJS runs synchronously, so the thread sleeps on `answered` while the pool's event loop
 * answers on `replies`. An answer to an earlier request, whose wait ran out of time, is skipped.
 */
function requestEntry (id: number, index: number, deadline: number): EntryReply | undefined {
  const seq = ++lastSeq
  post({ type: 'read', id, index, seq })
  for (;;) {
    // Read before the queue, so that an answer arriving after the queue was looked at wakes the wait.
    const seen = Atomics.load(answers, 0)
    for (let received = receiveMessageOnPort(replies); received !== undefined; received = receiveMessageOnPort(replies)) {
      const reply = received.message as EntryReply
      if (reply.seq === seq) return reply
    }
    const left = deadline - Date.now()
    if (left <= 0) return undefined
    Atomics.wait(answers, 0, seen, left)
  }
}

port.on('message', (job: ThreadJob) => {
  try {
    post({ type: 'result', id: job.id, result: run(job) })
  } catch (error) {
    // An exception from the host side, not from the code (its errors are
    // results): this thread's own stack ran out inside QuickJS (eval of
    // deeply nested code), or QuickJS aborted. Its instance is unusable:
    // the pool ends this thread and starts another.
    const message = error instanceof RangeError ? 'Stack overflow: the code is nested too deeply' : `The code sandbox failed: ${String(error)}`
    post({ type: 'result', id: job.id, result: { ok: false, error: message, logs: [] }, broken: true })
  }
})
post({ type: 'ready' })
