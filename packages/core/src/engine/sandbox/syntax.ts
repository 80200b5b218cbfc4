/**
 * The save-time check of a code step: QuickJS compiles the code wrapped
 * exactly as the pool runs it (wrap.ts), without running any of it.
 *
 * It runs synchronously on the caller's thread, so QuickJS must be loaded
 * first: `await loadCodeSyntaxChecker()` once at startup, then call
 * checkCodeSyntax as often as needed.
 */
import { newQuickJSWASMModule, type QuickJSWASMModule } from 'quickjs-emscripten'
import { codeSizeError, DEFAULT_CODE_SANDBOX_LIMITS, type CodeSandboxLimits } from './limits.ts'
import { CODE_FILENAME, COMPILE_STACK_BYTES, compileErrorMessage, lineInCode, NESTED_TOO_DEEPLY, wrapCode } from './wrap.ts'

export interface CodeSyntaxError {
  /** 1-based, in the author's code. */
  line: number
  /** QuickJS's message, e.g. "SyntaxError: unexpected token in expression: '}'". */
  message: string
}

/** The checker's own QuickJS instance: when one is broken (see checkCodeSyntax) it is replaced, which a shared instance could not be. */
let quickJS: QuickJSWASMModule | undefined
let loading: Promise<void> | undefined

/** Loads QuickJS for checkCodeSyntax (a few ms); resolves at once when it is loaded. */
export async function loadCodeSyntaxChecker (): Promise<void> {
  loading ??= newQuickJSWASMModule().then((module) => { quickJS = module }, (error: unknown) => {
    loading = undefined
    throw error
  })
  await loading
}

/**
 * Why the code does not compile, or null when it does. Throws when
 * loadCodeSyntaxChecker has not finished.
 */
export function checkCodeSyntax (code: string, limits: CodeSandboxLimits = DEFAULT_CODE_SANDBOX_LIMITS): CodeSyntaxError | null {
  const tooLarge = codeSizeError(code, limits)
  if (tooLarge !== undefined) return { line: 1, message: tooLarge }
  if (quickJS === undefined) throw new Error('The code syntax checker is not loaded: await loadCodeSyntaxChecker() first')
  try {
    return compile(quickJS, code, limits)
  } catch {
    // An exception from the host, not from QuickJS: this thread's own stack
    // ran out inside QuickJS's parser (see COMPILE_STACK_BYTES), which leaves
    // the instance unusable (freeing its runtime would abort). A fresh one
    // loads in the background; until then checkCodeSyntax throws.
    quickJS = undefined
    loading = undefined
    loadCodeSyntaxChecker().catch(() => {})
    return { line: 1, message: NESTED_TOO_DEEPLY }
  }
}

function compile (quickJS: QuickJSWASMModule, code: string, limits: CodeSandboxLimits): CodeSyntaxError | null {
  const runtime = quickJS.newRuntime()
  runtime.setMemoryLimit(limits.memoryBytes)
  runtime.setMaxStackSize(COMPILE_STACK_BYTES)
  const context = runtime.newContext()
  const result = context.evalCode(wrapCode(code), CODE_FILENAME, { type: 'global', compileOnly: true })
  let failure: CodeSyntaxError | null = null
  if (result.error === undefined) {
    result.value.dispose()
  } else {
    // An error QuickJS made while compiling: plain data, no author code behind it.
    const error = context.dump(result.error) as { name?: unknown, message?: unknown, lineNumber?: unknown }
    result.error.dispose()
    const line = lineInCode(typeof error.lineNumber === 'number' ? error.lineNumber : 1, code)
    failure = { line, message: compileErrorMessage(String(error.name), String(error.message), code, line) }
  }
  context.dispose()
  runtime.dispose()
  return failure
}
