import { sql } from 'drizzle-orm'
import { Value } from 'typebox/value'
import type { DbOrTx } from '../db/client.ts'
import type { AgentMemoryTurn } from '../db/schema/agent-memories.ts'
import { jsonb, textArray } from '../db/sql.ts'

/**
 * What tool-calling models share (the assistant's turns, the ai_agent node; README, AI agents):
 * tool names and the check of a call's arguments; and the statements of the ai_agent node: its
 * workflow tools and its memory.
 */

/** The most the model's arguments of one call may be, as it wrote them. */
const MAX_TOOL_ARGUMENTS_CHARS = 16 * 1024

/** A function name the provider accepts (letters, digits, _ and -, at most 64), from a workflow's or a server's tool name. */
export function toolFunctionName (name: string): string {
  const slug = name.toLowerCase().normalize('NFKD').replace(/[^a-z0-9_-]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 56)
  return slug === '' ? 'tool' : slug
}

/** `base`, or `base_2`, `base_3`… : the first not in `taken`, which it joins. */
export function uniqueName (base: string, taken: Set<string>): string {
  let name = base
  for (let n = 2; taken.has(name); n++) name = `${base}_${n}`
  taken.add(name)
  return name
}

/** The arguments of a call as the model wrote them, when they are a JSON object within the bound, else what to tell the model. */
export function parseToolArguments (raw: string): { args: Record<string, unknown> } | { error: string } {
  if (raw.length > MAX_TOOL_ARGUMENTS_CHARS) return { error: `the arguments are longer than ${MAX_TOOL_ARGUMENTS_CHARS} characters` }
  let args: unknown
  try {
    args = raw.trim() === '' ? {} : JSON.parse(raw)
  } catch {
    return { error: 'the arguments are not valid JSON' }
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return { error: 'the arguments must be a JSON object' }
  return { args: args as Record<string, unknown> }
}

/** The arguments of a call when they are valid for the tool's input schema (one its owner saved, checked then), else what to tell the model. */
export function checkToolArguments (tool: { inputSchema: Record<string, unknown> }, raw: string): { args: Record<string, unknown> } | { error: string } {
  const parsed = parseToolArguments(raw)
  if ('error' in parsed) return parsed
  if (!Value.Check(tool.inputSchema as never, parsed.args)) {
    const problems = [...Value.Errors(tool.inputSchema as never, parsed.args)].slice(0, 5).map((problem) => `${problem.instancePath === '' ? 'arguments' : problem.instancePath} ${problem.message}`)
    return { error: `the arguments do not match the tool's schema: ${problems.join('; ')}` }
  }
  return parsed
}

/** An AGENT workflow an ai_agent node names as a tool, as its owner saved it. */
export interface AgentToolWorkflow {
  id: string
  name: string
  /** triggerConfig.description, when it has one. */
  description: string | null
  /** triggerConfig.inputSchema, when it is an object. */
  inputSchema: Record<string, unknown> | null
}

/** The AGENT workflows of `ownerId` among `ids`, whatever their isActive (a save's check, and each run of the node). */
export async function agentToolWorkflows (db: DbOrTx, ownerId: string, ids: readonly string[]): Promise<AgentToolWorkflow[]> {
  if (ids.length === 0) return []
  return await db.execute<AgentToolWorkflow & Record<string, unknown>>(sql`
    select id, name, trigger_config->>'description' as description,
      case when jsonb_typeof(trigger_config->'inputSchema') = 'object' then trigger_config->'inputSchema' end as "inputSchema"
    from workflows
    where id = any(${textArray(ids)}) and user_id = ${ownerId} and trigger_type = 'AGENT'`)
}

/** Where an ai_agent node's memory is kept: its workflow, the node, the conversation or key. */
export interface AgentMemoryKey {
  workflowId: string
  nodeId: string
  key: string
}

/** The ai_agent node's statements (engine/README.md, "AI agents"). */
export function agentStore (db: DbOrTx) {
  return {
    workflowTools: async (ownerId: string, ids: readonly string[]): Promise<AgentToolWorkflow[]> => await agentToolWorkflows(db, ownerId, ids),

    /** The turns remembered under `key`, oldest first. */
    async recall ({ workflowId, nodeId, key }: AgentMemoryKey): Promise<AgentMemoryTurn[]> {
      const [row] = await db.execute<{ turns: AgentMemoryTurn[] }>(sql`
        select turns from agent_memories where workflow_id = ${workflowId} and node_id = ${nodeId} and key = ${key}`)
      return row?.turns ?? []
    },

    /**
     * Adds `turn` to the memory under `key`, keeping its last `keep` turns. A run's turn is added
     * once: a node run again after a crash finds its run's turn there and adds nothing.
     */
    async remember ({ workflowId, nodeId, key }: AgentMemoryKey, turn: AgentMemoryTurn, keep: number): Promise<void> {
      await db.execute(sql`
        insert into agent_memories as memory (workflow_id, node_id, key, turns)
        values (${workflowId}, ${nodeId}, ${key}, ${jsonb([turn])})
        on conflict (workflow_id, node_id, key) do update set
          turns = case when memory.turns @> ${jsonb([{ runId: turn.runId }])} then memory.turns else (
            select coalesce(jsonb_agg(kept.turn order by kept.n), '[]'::jsonb)
            from jsonb_array_elements(memory.turns || excluded.turns) with ordinality as kept(turn, n)
            where kept.n > jsonb_array_length(memory.turns) + 1 - ${keep}
          ) end,
          updated_at = now()`)
    }
  }
}

export type AgentStore = ReturnType<typeof agentStore>
