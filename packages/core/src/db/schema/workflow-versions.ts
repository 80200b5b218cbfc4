import { integer, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { createdAt } from './_columns.ts'
import { users } from './users.ts'
import { TRIGGER_TYPES, workflows, type WorkflowNode } from './workflows.ts'

export const EDGE_RULES = ['first', 'all'] as const
export type EdgeRule = typeof EDGE_RULES[number]

/**
 * The definitions a workflow has had: one immutable row per create and per change of its
 * trigger, nodes or edges. `workflows.version` names the current one, `runs.workflow_version`
 * the one a run executes to its end.
 */
export const workflowVersions = pgTable('workflow_versions', {
  workflowId: text('workflow_id').notNull().references(() => workflows.id, { onDelete: 'cascade' }),
  version: integer('version').notNull(),
  triggerType: text('trigger_type', { enum: TRIGGER_TYPES }).notNull(),
  triggerConfig: jsonb('trigger_config').$type<Record<string, unknown>>().notNull(),
  nodes: jsonb('nodes').$type<WorkflowNode[]>().notNull(),
  edges: jsonb('edges').$type<unknown>(),
  // Null for the versions recorded when versions were introduced, and once their author is deleted.
  createdBy: text('created_by').references(() => users.id, { onDelete: 'set null' }),
  // The version a restore copied.
  restoredFrom: integer('restored_from'),
  /**
   * How a node's several outgoing edges without a sourceHandle are followed (README, Branches):
   * `all` runs every target, `first` only the first (versions saved before that rule), so that no
   * stored workflow changes behaviour.
   */
  edgeRule: text('edge_rule', { enum: EDGE_RULES }).notNull().default('all'),
  createdAt: createdAt()
}, (t) => [primaryKey({ columns: [t.workflowId, t.version] })])

export type WorkflowVersion = typeof workflowVersions.$inferSelect
