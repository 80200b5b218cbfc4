import { sql } from 'drizzle-orm'
import { Value } from 'typebox/value'
import type { DbOrTx } from '../db/client.ts'
import { textArray } from '../db/sql.ts'
import type { ModelTool } from './model.ts'

/**
 * AGENT workflows as the assistant's tools (README, The assistant). A tool is an active AGENT
 * workflow of the number's owners with `triggerConfig.description` and `triggerConfig.inputSchema`
 * (JSON Schema of its arguments). Which tools a turn has is decided here, from the database,
 * never from anything a customer or the model writes.
 */

/** Tools offered in one turn: the most recently updated first. */
export const MAX_TOOLS = 32
/** The JSON of one input schema, checked when the workflow is saved. */
export const MAX_INPUT_SCHEMA_BYTES = 8 * 1024
const MAX_INPUT_SCHEMA_DEPTH = 8
/** The most the model's arguments of one call may be, as it wrote them. */
export const MAX_TOOL_ARGUMENTS_CHARS = 16 * 1024
const MAX_DESCRIPTION_CHARS = 1024

/**
 * The keywords an input schema may use: enough to describe arguments, none that runs a
 * pattern (a regular expression is not run in linear time by the validator) or fetches a reference.
 */
const SCHEMA_KEYWORDS = new Set([
  'type', 'properties', 'required', 'description', 'title', 'enum', 'const', 'items', 'default', 'examples',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
  'minLength', 'maxLength', 'minItems', 'maxItems', 'uniqueItems', 'additionalProperties', 'nullable', 'anyOf', 'oneOf'
])

/** Why `schema` cannot be a tool's input schema, or undefined when it can. */
export function inputSchemaProblem (schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'triggerConfig.inputSchema must be a JSON Schema object'
  if ((schema as Record<string, unknown>).type !== 'object') return 'triggerConfig.inputSchema must have type "object" (the tool\'s arguments)'
  if (Buffer.byteLength(JSON.stringify(schema)) > MAX_INPUT_SCHEMA_BYTES) return `triggerConfig.inputSchema must be at most ${MAX_INPUT_SCHEMA_BYTES} bytes of JSON`
  const check = (node: unknown, depth: number, inside: 'schema' | 'map'): string | undefined => {
    if (depth > MAX_INPUT_SCHEMA_DEPTH) return `triggerConfig.inputSchema is nested more than ${MAX_INPUT_SCHEMA_DEPTH} levels`
    if (typeof node !== 'object' || node === null) return inside === 'map' ? 'triggerConfig.inputSchema properties must be schemas' : undefined
    if (Array.isArray(node)) return undefined
    for (const [key, value] of Object.entries(node)) {
      if (inside === 'map') {
        const problem = check(value, depth + 1, 'schema')
        if (problem !== undefined) return problem
        continue
      }
      if (!SCHEMA_KEYWORDS.has(key)) return `triggerConfig.inputSchema may not use "${key.slice(0, 40)}"`
      const problem = key === 'properties'
        ? check(value, depth + 1, 'map')
        : key === 'items' || key === 'additionalProperties'
          ? check(value, depth + 1, 'schema')
          : key === 'anyOf' || key === 'oneOf'
            ? (Array.isArray(value) ? value.map((entry) => check(entry, depth + 1, 'schema')).find((found) => found !== undefined) : `triggerConfig.inputSchema ${key} must be an array`)
            : undefined
      if (problem !== undefined) return problem
    }
    return undefined
  }
  return check(schema, 0, 'schema')
}

/** Why an AGENT workflow's tool settings cannot be saved; both are optional (without them it is no tool). */
export function agentTriggerProblem (triggerConfig: Record<string, unknown>): string | undefined {
  const { description, inputSchema } = triggerConfig
  if (description !== undefined && (typeof description !== 'string' || description.length > MAX_DESCRIPTION_CHARS)) {
    return `triggerConfig.description must be a string of at most ${MAX_DESCRIPTION_CHARS} characters`
  }
  return inputSchema === undefined ? undefined : inputSchemaProblem(inputSchema)
}

export interface AssistantTool {
  /** The function name the model sees. */
  name: string
  workflowId: string
  /** The workflow's owner: the run is theirs. */
  userId: string
  description: string
  inputSchema: Record<string, unknown>
}

/** A function name the provider accepts (letters, digits, _ and -, at most 64), from a workflow name. */
const functionName = (workflowName: string): string => {
  const slug = workflowName.toLowerCase().normalize('NFKD').replace(/[^a-z0-9_-]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 56)
  return slug === '' ? 'tool' : slug
}

/** The tools of the number's owners (`ownerIds`): unique names, at most MAX_TOOLS. */
export async function loadTools (db: DbOrTx, ownerIds: readonly string[]): Promise<AssistantTool[]> {
  if (ownerIds.length === 0) return []
  const rows = await db.execute<{ id: string, userId: string, name: string, description: string, inputSchema: unknown }>(sql`
    select id, user_id as "userId", name, trigger_config->>'description' as description, trigger_config->'inputSchema' as "inputSchema"
    from workflows
    where is_active and trigger_type = 'AGENT' and user_id = any(${textArray(ownerIds)})
      and coalesce(trigger_config->>'description', '') <> '' and jsonb_typeof(trigger_config->'inputSchema') = 'object'
    order by updated_at desc, id
    limit ${MAX_TOOLS}`)
  const taken = new Set<string>()
  return rows.flatMap((row) => {
    // A schema saved before these checks existed is no tool until it is saved again.
    if (inputSchemaProblem(row.inputSchema) !== undefined) return []
    const base = functionName(row.name)
    let name = base
    for (let n = 2; taken.has(name); n++) name = `${base}_${n}`
    taken.add(name)
    return [{ name, workflowId: row.id, userId: row.userId, description: row.description, inputSchema: row.inputSchema as Record<string, unknown> }]
  })
}

export const modelToolsOf = (tools: readonly AssistantTool[]): ModelTool[] => tools.map((tool) => ({
  type: 'function',
  function: { name: tool.name, description: tool.description, parameters: tool.inputSchema }
}))

/** The arguments of a call when they are valid for the tool, else what to tell the model. */
export function checkToolArguments (tool: AssistantTool, raw: string): { args: Record<string, unknown> } | { error: string } {
  if (raw.length > MAX_TOOL_ARGUMENTS_CHARS) return { error: `the arguments are longer than ${MAX_TOOL_ARGUMENTS_CHARS} characters` }
  let args: unknown
  try {
    args = raw.trim() === '' ? {} : JSON.parse(raw)
  } catch {
    return { error: 'the arguments are not valid JSON' }
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return { error: 'the arguments must be a JSON object' }
  if (!Value.Check(tool.inputSchema as never, args)) {
    const problems = [...Value.Errors(tool.inputSchema as never, args)].slice(0, 5).map((problem) => `${problem.instancePath === '' ? 'arguments' : problem.instancePath} ${problem.message}`)
    return { error: `the arguments do not match the tool's schema: ${problems.join('; ')}` }
  }
  return { args: args as Record<string, unknown> }
}
