import { index, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { nullableTimestamp } from './_columns.ts'
import { workflows } from './workflows.ts'

/** One turn an ai_agent remembers: what it was given and what it answered, in the run that made it. */
export interface AgentMemoryTurn {
  runId: string
  input: string
  output: string
  at: string
}

/**
 * What one ai_agent node remembers per conversation or key (README, AI agents: memory): its last
 * turns, at most the node's `memory.turns`. Gone with the workflow, and when no run used it for
 * RUN_RETENTION_DAYS (retention/retention.ts).
 */
export const agentMemories = pgTable('agent_memories', {
  workflowId: text('workflow_id').notNull().references(() => workflows.id, { onDelete: 'cascade' }),
  nodeId: text('node_id').notNull(),
  key: text('key').notNull(),
  turns: jsonb('turns').$type<AgentMemoryTurn[]>().notNull(),
  updatedAt: nullableTimestamp('updated_at').notNull().defaultNow()
}, (t) => [
  primaryKey({ columns: [t.workflowId, t.nodeId, t.key] }),
  index('agent_memories_updated_idx').on(t.updatedAt)
])
