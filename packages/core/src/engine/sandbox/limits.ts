/** What one run of a workflow author's code may use, and the messages that say a limit was passed. */
import type { Config } from '../../config.ts'

export interface CodeSandboxLimits {
  /** QuickJS heap: the input, everything the code allocates and the output's JSON text. */
  memoryBytes: number
  /** Wall-clock time of one run inside its thread, from compiling the code to serializing the output. */
  cpuMs: number
  /** UTF-8 bytes of the code itself. */
  codeMaxBytes: number
  /** UTF-8 bytes of the output's JSON text. */
  outputMaxBytes: number
  /** Console lines kept per run; one more line says how many were dropped. */
  logMaxLines: number
  /** Characters kept per console line (and per error message); the rest is cut with a marker. */
  logLineMaxChars: number
}

export const DEFAULT_CODE_SANDBOX_LIMITS: Readonly<CodeSandboxLimits> = Object.freeze({
  memoryBytes: 32 * 1024 * 1024,
  cpuMs: 1000,
  codeMaxBytes: 64 * 1024,
  outputMaxBytes: 1024 * 1024,
  logMaxLines: 100,
  logLineMaxChars: 2000
})

const MIB = 1024 * 1024
const bytes = (count: number): string => count % MIB === 0 ? `${count / MIB} MiB` : `${count} bytes`

export const cpuTimeError = (limits: CodeSandboxLimits): string => `Code ran longer than ${limits.cpuMs} ms (CODE_CPU_MS)`
export const memoryError = (limits: CodeSandboxLimits): string => `Code used more than ${bytes(limits.memoryBytes)} of memory (CODE_MEMORY_BYTES)`
export const outputSizeError = (limits: CodeSandboxLimits): string => `Output is larger than ${limits.outputMaxBytes} bytes (NODE_OUTPUT_MAX_BYTES)`

/** Why the code is refused before it is compiled, if it is larger than the limit. */
export function codeSizeError (code: string, limits: Pick<CodeSandboxLimits, 'codeMaxBytes'>): string | undefined {
  if (Buffer.byteLength(code) <= limits.codeMaxBytes) return undefined
  return `Code is larger than ${limits.codeMaxBytes} bytes (CODE_MAX_BYTES)`
}

/** The limits the settings give (README, Code): the output's is every node's, NODE_OUTPUT_MAX_BYTES. */
export const codeSandboxLimitsOf = ({ codeSandbox, limits, nodeOutputMaxBytes }: Pick<Config, 'codeSandbox' | 'limits' | 'nodeOutputMaxBytes'>): CodeSandboxLimits => ({
  ...DEFAULT_CODE_SANDBOX_LIMITS,
  memoryBytes: codeSandbox.memoryBytes,
  cpuMs: codeSandbox.cpuMs,
  codeMaxBytes: limits.codeMaxBytes,
  outputMaxBytes: nodeOutputMaxBytes
})
