import { isRecord } from './records.ts'

/**
 * An `ai_agent` node's steps as the run page shows them, read from its output: the final one
 * (`{text | json, steps, model, tokensIn, tokensOut}`) or the one it stores while it works or waits
 * (`{agentOfRun, steps, waitingFor?}`), both written by packages/core/src/engine/nodes/ai-agent.ts.
 * A step that does not have the shape is left out rather than shown wrong.
 */

export interface AgentToolCall {
  id: string
  name: string
  /** As the model wrote them: JSON text, which may not parse. */
  arguments: string
}

export type AgentStep =
  | { type: 'model', text: string | null, toolCalls: AgentToolCall[], model: string, tokensIn: number, tokensOut: number }
  | { type: 'tool', callId: string, name: string, status: 'succeeded' | 'failed' | 'refused', result: string, runId: string | null }

export interface AgentView {
  steps: AgentStep[]
  /** The tool runs the node waits for (none once it answered). */
  waitingFor: Array<{ name: string, runId: string }>
  /** Whether this is the node's final output (it answered). */
  answered: boolean
}

/** What a step shows of a tool's result or of the model's arguments; the node's output below has all of it. */
const SHOWN_CHARS = 300

/** `text`, or its first `max` characters and `…`. */
export const shortened = (text: string, max = SHOWN_CHARS): string => text.length > max ? `${text.slice(0, max - 1)}…` : text

const TOOL_STATUSES = new Set(['succeeded', 'failed', 'refused'])

function toolCallOf (value: unknown): AgentToolCall | undefined {
  if (!isRecord(value) || typeof value.id !== 'string' || typeof value.name !== 'string' || typeof value.arguments !== 'string') return undefined
  return { id: value.id, name: value.name, arguments: value.arguments }
}

function stepOf (value: unknown): AgentStep | undefined {
  if (!isRecord(value)) return undefined
  if (value.type === 'model') {
    if ((typeof value.text !== 'string' && value.text !== null) || typeof value.model !== 'string' || !Array.isArray(value.toolCalls)) return undefined
    return {
      type: 'model',
      text: value.text,
      toolCalls: value.toolCalls.map(toolCallOf).filter((call) => call !== undefined),
      model: value.model,
      tokensIn: typeof value.tokensIn === 'number' ? value.tokensIn : 0,
      tokensOut: typeof value.tokensOut === 'number' ? value.tokensOut : 0
    }
  }
  if (value.type === 'tool') {
    if (typeof value.callId !== 'string' || typeof value.name !== 'string' || typeof value.status !== 'string' || !TOOL_STATUSES.has(value.status) || typeof value.result !== 'string') return undefined
    return { type: 'tool', callId: value.callId, name: value.name, status: value.status as 'succeeded' | 'failed' | 'refused', result: value.result, runId: typeof value.runId === 'string' ? value.runId : null }
  }
  return undefined
}

/** The agent's steps in `output`, or undefined when it is not an ai_agent node's output. */
export function agentViewOf (output: unknown): AgentView | undefined {
  if (!isRecord(output) || !Array.isArray(output.steps)) return undefined
  const waitingFor = Array.isArray(output.waitingFor)
    ? output.waitingFor.filter((wait): wait is { name: string, runId: string } => isRecord(wait) && typeof wait.name === 'string' && typeof wait.runId === 'string')
    : []
  return {
    steps: output.steps.map(stepOf).filter((step) => step !== undefined),
    waitingFor,
    answered: 'text' in output || 'json' in output
  }
}

/** The node section's one-line summary: `2 model calls, 1 tool call`, and what it waits for. */
export function agentProgress ({ steps, waitingFor }: AgentView): string {
  const count = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`
  const models = steps.filter((step) => step.type === 'model')
  const made = `${count(models.length, 'model call')}, ${count(models.reduce((sum, step) => sum + step.toolCalls.length, 0), 'tool call')}`
  return waitingFor.length === 0 ? made : `${made}; waiting for ${waitingFor.map((wait) => wait.name).join(', ')}`
}
