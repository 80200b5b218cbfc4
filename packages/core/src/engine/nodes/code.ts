import { Type } from 'typebox'
import { codeSizeError } from '../sandbox/limits.ts'
import { NodeError } from '../types.ts'
import { requiredString } from './config.ts'
import { defineNode, PURE_TRAITS } from './definition.ts'

/** The most CODE_MAX_BYTES may allow (README, Configuration); the setting is checked at save time. */
const CODE_MAX_BYTES_CEILING = 1024 * 1024

/**
 * JavaScript written by the workflow author, run in a QuickJS sandbox on the worker's pool of
 * threads (README, Code): no process, file system, network, timers or other runs; bounded memory,
 * time and output. `input` is the run so far (`triggerData` and earlier nodes' outputs), a lazy,
 * read-only view whose entries are copied into the sandbox only when the code reads them
 * (sandbox/input.ts): the pool keeps each entry's JSON with `result` for the run's later code
 * nodes. What the code returns is the node's output. It has no outside effect, so it runs between checkpoints
 * like `set`: `Date.now` and `Math.random` may give other values when a takeover runs it again,
 * which is harmless because results are checkpointed before any effect uses them.
 */
export const code = defineNode({
  type: 'code',
  category: 'Code',
  description: 'Runs JavaScript in a sandbox: `input` is the run so far (triggerData and earlier nodes’ outputs); what the code returns becomes the node’s output.',
  config: {
    code: Type.String({
      minLength: 1,
      maxLength: CODE_MAX_BYTES_CEILING,
      description: 'The body of an async function of `input`: `return` its output (JSON). `console.log` lines go to the run’s log; `await` works; there are no timers, modules or network. At most CODE_MAX_BYTES (64 KiB by default; README, Code).'
    })
  },
  example: { code: 'const items = input.triggerData.items ?? []\nreturn { count: items.length, total: items.reduce((sum, item) => sum + item.price, 0) }' },
  // The code is the author's program, never a template: `{{` may be JavaScript.
  traits: { ...PURE_TRAITS, templateFields: [], codeFields: ['code'] },
  validate (config, limits) {
    const tooLarge = typeof config.code === 'string' ? codeSizeError(config.code, limits) : undefined
    if (tooLarge !== undefined) throw new NodeError(`code line 1: ${tooLarge}`)
  },
  // Compiled on a sandbox thread, so that a save of large code never holds the api's event loop.
  async validateAsync (config, tools) {
    if (typeof config.code !== 'string') return undefined
    const problem = await tools.code.check(config.code)
    return problem === null ? undefined : `code line ${problem.line}: ${problem.message}`
  },
  async execute ({ config, run, result, log, deps, signal }) {
    const outcome = await deps.code.run(requiredString(config, 'code'), result, { signal, owner: run.userId })
    for (const line of outcome.logs) log(line.level, line.message)
    if (!outcome.ok) throw new NodeError(outcome.error)
    return { output: outcome.output }
  }
})
