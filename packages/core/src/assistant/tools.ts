import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { toolFunctionName, uniqueName } from '../engine/agents.ts'
import { objectSchemaProblem } from '../engine/json-schema.ts'
import { textArray } from '../db/sql.ts'
import type { ModelTool } from './model.ts'

/**
 * AGENT workflows as the assistant's tools (README, The assistant). A tool is an active AGENT
 * workflow of the number's owners with `triggerConfig.description` and `triggerConfig.inputSchema`
 * (JSON Schema of its arguments). Which tools a turn has is decided here, from the database,
 * never from anything a customer or the model writes.
 */

/** Tools offered in one turn: the most recently updated first. */
const MAX_TOOLS = 32
/** The JSON of one input schema, checked when the workflow is saved. */
const MAX_INPUT_SCHEMA_BYTES = 8 * 1024
const MAX_DESCRIPTION_CHARS = 1024

/** Why `schema` cannot be a tool's input schema (the schema of its arguments), or undefined when it can. */
const inputSchemaProblem = (schema: unknown): string | undefined =>
  objectSchemaProblem(schema, 'triggerConfig.inputSchema', MAX_INPUT_SCHEMA_BYTES)

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
    const name = uniqueName(toolFunctionName(row.name), taken)
    return [{ name, workflowId: row.id, userId: row.userId, description: row.description, inputSchema: row.inputSchema as Record<string, unknown> }]
  })
}

export const modelToolsOf = (tools: readonly AssistantTool[]): ModelTool[] => tools.map((tool) => ({
  type: 'function',
  function: { name: tool.name, description: tool.description, parameters: tool.inputSchema }
}))
