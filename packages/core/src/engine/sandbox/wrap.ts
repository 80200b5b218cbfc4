/**
 * How the author's code is wrapped before QuickJS compiles it, and how its
 * compile errors are said: the same for the save-time check and for a run
 * (thread.ts does both), so that both compile exactly the same text under the
 * same stack limit.
 */

/** The file name QuickJS gives the author's code in error stacks. */
export const CODE_FILENAME = 'code.js'

/**
 * QuickJS's stack limit while it compiles the author's code. QuickJS counts
 * only the C stack inside the WebAssembly memory, while its recursive parser
 * uses about 30 times as much of the calling thread's own stack: with this
 * limit, parentheses nested 250 deep (the worst case measured) need about
 * half of a 1 MiB stack, well within a sandbox thread's. Enough for 100
 * `else if` branches in a row or 60 nested classes.
 */
export const COMPILE_STACK_BYTES = 16 * 1024

/**
 * The author's code as the body of an async function of `input` (so `await`
 * works and `return` gives the output), in strict mode (an undeclared
 * variable is an error, not a global). The header is on the author's first
 * line, so QuickJS's line numbers are the author's; the closing brace has a
 * line of its own so that a last-line `// comment` does not swallow it.
 */
export function wrapCode (code: string): string {
  return `(async function (input) {"use strict";${code}\n})`
}

/** A line QuickJS reported, within the author's code: an error in the closing line is on the author's last line. */
export function lineInCode (line: number, code: string): number {
  let lines = 1
  for (let at = code.indexOf('\n'); at !== -1; at = code.indexOf('\n', at + 1)) lines++
  return Math.min(Math.max(line, 1), lines)
}

/** QuickJS ran out of stack while compiling the code. */
const NESTED_TOO_DEEPLY = 'Stack overflow: the code is nested too deeply to compile'

/**
 * QuickJS's message for a compile error on `line`, made clear where it is
 * not: in a script, `import x from 'y'` is read as a call of import() and
 * reported as "expecting '('".
 */
export function compileErrorMessage (name: string, message: string, code: string, line: number): string {
  if (message === 'stack overflow') return NESTED_TOO_DEEPLY
  const text = `${name}: ${message}`
  const source = code.split('\n')[line - 1] ?? ''
  return /^\s*import\s*[\w{*'"]/.test(source) ? `${text}: import statements are not available, the code runs as a script` : text
}
