import { CronExpressionParser } from 'cron-parser'
import { DEFAULT_LIMITS, type Limits } from '../config.ts'
import { DomainError } from '../errors.ts'
import { RUN_TAG_BOUNDS } from '../runs/search.ts'
import type { NodeDefinition, NodeSaveTools } from '../engine/nodes/definition.ts'
import { flowOf, NODE_LINK_FIELDS, nodeDefinition, templatedFields } from '../engine/nodes/index.ts'
import { checkRetryConfig } from '../engine/retry.ts'
import { matchPathError } from '../engine/nodes/wait-for-event.ts'
import { templateProblem } from '../engine/template.ts'
import type { CancelOn, FlowControl, TriggerType, WorkflowEdge, WorkflowNode } from '../db/schema/workflows.ts'
import { agentTriggerProblem } from '../assistant/tools.ts'
import { checkNodeConfig } from './node-config.ts'
import { joinOf, outgoingLinks, withImplicitForks } from '../engine/graph.ts'
import { PARALLEL_MAX_BRANCHES } from '../engine/nodes/parallel.ts'
import type { EdgeRule } from '../db/schema/workflow-versions.ts'

/** KEYWORD triggerConfig.match (README, Triggers); `contains` when absent. */
const KEYWORD_MATCH_MODES = ['contains', 'exact', 'startsWith'] as const

const DEFAULT_TIMEZONE = 'UTC'

const invalidGraph = (message: string): DomainError => new DomainError('INVALID_WORKFLOW_GRAPH', message)
const invalidField = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * A workflow's `edges` as the engine reads them: absent means none; otherwise
 * an array of `{source, target, sourceHandle?}` (other keys a builder saves are kept).
 */
function parseEdges (edges: unknown): WorkflowEdge[] {
  if (edges === undefined || edges === null) return []
  if (!Array.isArray(edges)) throw invalidGraph('edges must be an array')
  edges.forEach((edge: unknown, i) => {
    if (!isRecord(edge)) throw invalidGraph(`edges[${i}] must be an object`)
    for (const end of ['source', 'target'] as const) {
      if (typeof edge[end] !== 'string') throw invalidGraph(`edges[${i}].${end} is required`)
    }
  })
  return edges as WorkflowEdge[]
}

/** A node's link fields (its type's `links` trait) hold node ids, or maps of values to node ids. */
function checkLinkShape (node: WorkflowNode, definition: NodeDefinition): void {
  const config = node.config ?? {}
  for (const { field, kind } of definition.traits.links) {
    const value = config[field]
    if (value === undefined) continue
    if (kind === 'node' && typeof value !== 'string') throw invalidGraph(`Node ${node.id}: ${field} must be a node id`)
    if (kind === 'map' && (!isRecord(value) || Object.values(value).some((target) => typeof target !== 'string'))) {
      throw invalidGraph(`Node ${node.id}: ${field} must map values to node ids`)
    }
    if (kind === 'list' && (!Array.isArray(value) || value.some((target) => typeof target !== 'string'))) {
      throw invalidGraph(`Node ${node.id}: ${field} must be a list of node ids`)
    }
  }
}

/**
 * Every fork (a parallel node, or under the edge rule `all` a node whose edges run several targets)
 * has one join its branches reach, or, an implicit one, none; forks nest at most FORK_MAX_NESTING
 * deep; every join is some fork's (engine/README.md, "Branches and joins").
 */
function checkBranches (nodes: readonly WorkflowNode[], edges: readonly WorkflowEdge[], edgeRule: EdgeRule): void {
  const graph = withImplicitForks({ nodes: [...nodes], edges }, edgeRule)
  // An implicit fork is named by the node whose edges it runs.
  const named = (id: string): string => graph.implicitForks?.get(id) ?? id
  const joined = new Set<string>()
  for (const node of graph.nodes) {
    if (flowOf(node) !== 'fork') continue
    const source = graph.implicitForks?.get(node.id)
    const width = (node.config?.branches as unknown[]).length
    if (source !== undefined && width > PARALLEL_MAX_BRANCHES) {
      throw invalidGraph(`Node ${source}: its edges without a sourceHandle run ${width} targets at once, more than ${PARALLEL_MAX_BRANCHES}`)
    }
    const join = joinOf(graph, node, NODE_LINK_FIELDS, flowOf)
    if ('problem' in join) throw invalidGraph(`Node ${named(join.at)}: ${join.problem}`)
    if (join.joinId === undefined) continue
    if (joined.has(join.joinId)) throw invalidGraph(`Node ${join.joinId}: merge joins the branches of more than one parallel node`)
    joined.add(join.joinId)
  }
  const unreached = nodes.find((node) => flowOf(node) === 'join' && !joined.has(node.id))
  if (unreached !== undefined) throw invalidGraph(`Node ${unreached.id}: merge is not reached by the branches of any parallel node`)
}

/**
 * A node's config as its definition wants it: the type's own checks (a `matches` pattern, a switch
 * set when written), `retry` and `timeoutMs` (README, Retries and time-outs), the filters of its
 * templates (README, Templates), then its schema.
 */
function checkConfig (node: WorkflowNode, definition: NodeDefinition, limits: WorkflowLimits): void {
  const config = node.config ?? {}
  try {
    definition.validate?.(config, limits)
    checkRetryConfig(definition, config)
  } catch (err) {
    throw invalidField(`Node ${node.id}: ${(err as Error).message}`)
  }
  const fields = templatedFields(definition, config)
  const templates = fields === 'every' ? config : fields.map((field) => config[field])
  // `credential` is checked with the workflow's other credential references, after who may change them (README, Credentials).
  const { credential: _credential, ...checked } = config
  const problem = templateProblem(templates) ?? checkNodeConfig(definition, checked)
  if (problem !== undefined) throw invalidField(`Node ${node.id}: ${problem}`)
}

/** Reports the first node a link leads back to, following links depth first in array order. */
function findCycle (nodes: readonly WorkflowNode[], edges: readonly WorkflowEdge[]): string | null {
  const targets = new Map(nodes.map((node) => [node.id, outgoingLinks(node, edges, NODE_LINK_FIELDS).map((link) => link.target)]))
  const state = new Map<string, 'open' | 'done'>()
  for (const root of nodes) {
    if (state.has(root.id)) continue
    // Iterative, so that a long chain of nodes cannot overflow the call stack.
    const stack: Array<{ id: string, next: number }> = [{ id: root.id, next: 0 }]
    state.set(root.id, 'open')
    while (stack.length > 0) {
      const frame = stack[stack.length - 1]!
      const children = targets.get(frame.id) ?? []
      if (frame.next === children.length) {
        state.set(frame.id, 'done')
        stack.pop()
        continue
      }
      const child = children[frame.next++]!
      const seen = state.get(child)
      if (seen === 'open') return child
      if (seen === undefined) {
        state.set(child, 'open')
        stack.push({ id: child, next: 0 })
      }
    }
  }
  return null
}

/** The bounds validation applies (config `limits`). */
export type WorkflowLimits = Pick<Limits, 'workflowMaxNodes' | 'cronMinIntervalSeconds' | 'codeMaxBytes'>

/**
 * Checks a workflow graph before it is stored (README, Workflows): a bounded
 * number of nodes, known node types, unique ids, links that reach existing nodes,
 * no cycles, forks that meet at their joins as the edge rule it is stored under
 * reads its edges (new versions: `all`). `wait` nodes suspend a run, they do not
 * make loops legal. Throws a 400 DomainError naming the node.
 */
export function validateWorkflowGraph (nodes: readonly WorkflowNode[], edges: unknown, limits: WorkflowLimits = DEFAULT_LIMITS, edgeRule: EdgeRule = 'all'): void {
  if (nodes.length > limits.workflowMaxNodes) {
    throw new DomainError('TOO_MANY_NODES', `Workflow has too many nodes (max ${limits.workflowMaxNodes})`)
  }
  const ids = new Set<string>()
  for (const node of nodes) {
    const definition = nodeDefinition(node.type)
    if (definition === undefined) throw invalidGraph(`Unknown node type: ${node.type}`)
    if (ids.has(node.id)) throw invalidGraph(`Duplicate node id: ${node.id}`)
    ids.add(node.id)
    checkLinkShape(node, definition)
    checkConfig(node, definition, limits)
  }
  const links = parseEdges(edges)
  for (const node of nodes) {
    for (const link of outgoingLinks(node, [], NODE_LINK_FIELDS)) {
      if (!ids.has(link.target)) throw invalidGraph(`Node ${node.id}: ${link.via} refers to missing node ${link.target}`)
    }
  }
  links.forEach((edge, i) => {
    for (const end of ['source', 'target'] as const) {
      if (!ids.has(edge[end])) throw invalidGraph(`Edge ${i}: ${end} refers to missing node ${edge[end]}`)
    }
  })
  const cycleAt = findCycle(nodes, links)
  if (cycleAt !== null) throw invalidGraph(`Workflow graph has a cycle at ${cycleAt}`)
  checkBranches(nodes, links, edgeRule)
}

function isValidTimezone (timezone: string): boolean {
  try {
    Intl.DateTimeFormat('en-US', { timeZone: timezone })
    return true
  } catch {
    return false
  }
}

/**
 * Parses a cron expression (5 fields, or 6 with seconds) in an IANA timezone
 * and returns its next fire time after `from`; throws 400 `Invalid cron expression: <reason>`.
 */
export function validateCronExpression (expression: string, timezone = DEFAULT_TIMEZONE, from = new Date()): Date {
  const invalid = (reason: string): DomainError => new DomainError('INVALID_CRON_EXPRESSION', `Invalid cron expression: ${reason}`)
  if (!isValidTimezone(timezone)) throw new DomainError('INVALID_TIMEZONE', `Invalid timezone: ${timezone}`)
  const fields = expression.trim().split(/\s+/).filter(Boolean).length
  if (fields !== 5 && fields !== 6) throw invalid(`expected 5 or 6 fields, got ${fields}`)
  try {
    return CronExpressionParser.parse(expression, { tz: timezone, currentDate: from }).next().toDate()
  } catch (err) {
    throw invalid((err as Error).message)
  }
}

const SECONDS_PER_DAY = 86_400

/**
 * The shortest time between two ticks of a valid cron expression, in seconds.
 * Every day is taken as matching, so the answer is never longer than the truth
 * (it is shorter only for a gap across midnight into a day that does not match).
 * @internal exported for its tests
 */
export function shortestCronInterval (expression: string): number {
  const { second, minute, hour } = CronExpressionParser.parse(expression).fields
  const ascending = (values: readonly unknown[]): number[] => [...values as number[]].sort((a, b) => a - b)
  const seconds = ascending(second.values)
  const minutes = ascending(minute.values)
  const hours = ascending(hour.values)
  let first: number | undefined
  let previous: number | undefined
  let shortest = SECONDS_PER_DAY
  for (const h of hours) {
    for (const m of minutes) {
      for (const s of seconds) {
        const time = h * 3600 + m * 60 + s
        if (previous !== undefined) shortest = Math.min(shortest, time - previous)
        first ??= time
        previous = time
      }
    }
  }
  // The last tick of a day and the first of the next.
  return Math.min(shortest, SECONDS_PER_DAY - previous! + first!)
}

export interface CronTrigger {
  cronExpression: string
  timezone: string
}

/**
 * The cron trigger a workflow declares, or null when it has none: not CRON, or
 * a CRON draft without an expression. Assumes a config that passed `validateTriggerConfig`.
 */
export function cronTriggerOf (triggerType: TriggerType, triggerConfig: Record<string, unknown>): CronTrigger | null {
  if (triggerType !== 'CRON' || typeof triggerConfig.cronExpression !== 'string') return null
  const timezone = typeof triggerConfig.timezone === 'string' ? triggerConfig.timezone : DEFAULT_TIMEZONE
  return { cronExpression: triggerConfig.cronExpression, timezone }
}

/** Checks the fields of triggerConfig that the trigger of `triggerType` reads; other keys are free. */
export function validateTriggerConfig (triggerType: TriggerType, triggerConfig: Record<string, unknown>, limits: WorkflowLimits = DEFAULT_LIMITS): void {
  const { cronExpression, timezone, eventName, keywords, match } = triggerConfig
  switch (triggerType) {
    case 'CRON':
      if (timezone !== undefined && (typeof timezone !== 'string' || !isValidTimezone(timezone))) {
        throw new DomainError('INVALID_TIMEZONE', `Invalid timezone: ${String(timezone)}`)
      }
      // A CRON workflow without an expression is a draft: valid, but never scheduled.
      if (cronExpression === undefined || cronExpression === null) return
      if (typeof cronExpression !== 'string') {
        throw new DomainError('INVALID_CRON_EXPRESSION', 'Invalid cron expression: must be a string')
      }
      validateCronExpression(cronExpression, (timezone as string | undefined) ?? DEFAULT_TIMEZONE)
      // Six fields can fire every second: one run a second per workflow is a load no one meant.
      if (shortestCronInterval(cronExpression) < limits.cronMinIntervalSeconds) {
        throw new DomainError('CRON_TOO_FREQUENT', `Cron expression fires too often (minimum interval ${limits.cronMinIntervalSeconds} seconds)`)
      }
      return
    case 'EVENT':
      if (eventName !== undefined && typeof eventName !== 'string') throw invalidField('triggerConfig.eventName must be a string')
      return
    case 'KEYWORD':
      if (keywords !== undefined && (!Array.isArray(keywords) || keywords.some((keyword) => typeof keyword !== 'string'))) {
        throw invalidField('triggerConfig.keywords must be an array of strings')
      }
      if (match !== undefined && !(KEYWORD_MATCH_MODES as readonly unknown[]).includes(match)) {
        throw invalidField(`triggerConfig.match must be one of ${KEYWORD_MATCH_MODES.join(', ')}`)
      }
      return
    case 'AGENT': {
      const problem = agentTriggerProblem(triggerConfig)
      if (problem !== undefined) throw invalidField(problem)
    }
  }
}

/**
 * The checks of `nodes` that are done off the event loop (`validateAsync`: a code node's code is
 * compiled on a sandbox thread), after `validateWorkflowGraph`; a 400 naming the node.
 */
export async function validateNodesAsync (nodes: readonly WorkflowNode[], tools: NodeSaveTools): Promise<void> {
  for (const node of nodes) {
    const problem = await nodeDefinition(node.type)?.validateAsync?.(node.config ?? {}, tools)
    if (problem !== undefined) throw invalidField(`Node ${node.id}: ${problem}`)
  }
}

/** A workflow's runTags (README, Finding runs): a template over the trigger's data, its placeholders well formed. */
export function validateRunTags (runTags: string | null | undefined): void {
  if (runTags === undefined || runTags === null) return
  if (runTags.length > RUN_TAG_BOUNDS.template) throw new DomainError('VALIDATION_ERROR', `runTags must be at most ${RUN_TAG_BOUNDS.template} characters`)
  const problem = templateProblem(runTags)
  if (problem !== undefined) throw new DomainError('VALIDATION_ERROR', `runTags: ${problem}`)
}

/**
 * A workflow's flowControl (README, Flow control) beyond the shape the api's schema checks: its
 * templates well formed, a debounce's maxWaitSeconds not shorter than its period.
 */
export function validateFlowControl (flowControl: FlowControl | null | undefined): void {
  if (flowControl === undefined || flowControl === null) return
  const { concurrency, rateLimit, debounce, priority } = flowControl
  // Unknown parts are dropped (README, Conventions): what is left must hold one.
  if (concurrency === undefined && rateLimit === undefined && debounce === undefined && priority === undefined) {
    throw new DomainError('VALIDATION_ERROR', 'flowControl must be an object with concurrency, rateLimit, debounce or priority, or null')
  }
  const templates: Array<[string, string | number | undefined]> = [
    ['flowControl.concurrency.key', concurrency?.key],
    ['flowControl.rateLimit.key', rateLimit?.key],
    ['flowControl.debounce.key', debounce?.key],
    ['flowControl.priority.value', priority?.value],
    ['flowControl.priority.key', priority?.key]
  ]
  for (const [field, template] of templates) {
    const problem = typeof template === 'string' ? templateProblem(template) : undefined
    if (problem !== undefined) throw new DomainError('VALIDATION_ERROR', `${field}: ${problem}`)
  }
  if (debounce?.maxWaitSeconds !== undefined && debounce.maxWaitSeconds < debounce.periodSeconds) {
    throw new DomainError('VALIDATION_ERROR', 'flowControl.debounce.maxWaitSeconds must be at least its periodSeconds')
  }
}

/**
 * A workflow's cancelOn (README, Events and waits) beyond the shape the api's schema checks: each
 * match's paths well formed and its templates too.
 */
export function validateCancelOn (cancelOn: readonly CancelOn[] | null | undefined): void {
  for (const [index, rule] of (cancelOn ?? []).entries()) {
    for (const [path, template] of Object.entries(rule.match ?? {})) {
      const problem = matchPathError(path) ?? templateProblem(template)
      if (problem !== undefined) throw new DomainError('VALIDATION_ERROR', `cancelOn[${index}].match: ${problem}`)
    }
  }
}

/** Everything checked before a workflow is stored, in the order its errors come (README, Workflows): graph, then trigger. */

export function validateWorkflow (workflow: {
  triggerType: TriggerType
  triggerConfig: Record<string, unknown>
  nodes: readonly WorkflowNode[]
  edges: unknown
}, limits: WorkflowLimits = DEFAULT_LIMITS): void {
  validateWorkflowGraph(workflow.nodes, workflow.edges, limits)
  validateTriggerConfig(workflow.triggerType, workflow.triggerConfig, limits)
}
