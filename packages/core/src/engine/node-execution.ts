import type { LogLevel } from '../db/schema/runs.ts'
import type { WorkflowNode } from '../db/schema/workflows.ts'
import { joinOf, type WorkflowGraph } from './graph.ts'
import { neverAborted, pause, pureAttempt, timedAttempt } from './attempts.ts'
import { watchingClaim } from './cancellation.ts'
import { errorMessage, type Execution } from './execution.ts'
import { jsonStringBytes, UnserializableValueError, type JsonSizer } from './json-size.ts'
import type { NodeDefinition } from './nodes/definition.ts'
import { flowOf, NODE_LINK_FIELDS, nodeDefinition, templatedFields } from './nodes/index.ts'
import { retryPolicyOf, retrySchedule, type RetryDecision } from './retry.ts'
import { renderTemplate } from './template.ts'
import { NodeError, RetryableNodeError, type CredentialResolver, type NodeContext, type NodeDependencies, type NodeResult, type NodeSecrets, type RunControl } from './types.ts'

/** A node may show a few missing paths; a config with thousands of them must not write thousands of lines. */
const MAX_MISSING_PATH_LINES = 20
/** Paths are quoted in log lines up to this many characters. */
const MAX_QUOTED_PATH_LENGTH = 200

/** The join of a fork node, or undefined: an implicit fork without one (a save refuses a parallel without one). */
export function joinIdOf (graph: WorkflowGraph, fork: WorkflowNode): string | undefined {
  const join = joinOf(graph, fork, NODE_LINK_FIELDS, flowOf)
  return 'joinId' in join ? join.joinId : undefined
}

/** What a fork or a join node (`flow`, its definition's trait) is told of the other. */
function flowContext (graph: WorkflowGraph, node: WorkflowNode, flow: NodeDefinition['traits']['flow']): NodeContext['flow'] {
  if (flow === undefined) return undefined
  if (flow === 'fork') {
    const joinId = joinIdOf(graph, node)
    return { join: graph.nodes.find((candidate) => candidate.id === joinId) }
  }
  return { fork: graph.nodes.find((candidate) => flowOf(candidate) === 'fork' && joinIdOf(graph, candidate) === node.id) }
}

/** A node's config with its template fields rendered against `scope` (`templatedFields`). */
function renderConfig (definition: NodeDefinition, rawConfig: Record<string, unknown>, scope: unknown, onMissing: (path: string) => void, limit: { maxBytes: number, sizer: JsonSizer }): Record<string, unknown> {
  const fields = templatedFields(definition, rawConfig)
  if (fields === 'every') return renderTemplate(rawConfig, scope, onMissing, limit) as Record<string, unknown>
  const rendered = { ...rawConfig }
  for (const field of fields) rendered[field] = renderTemplate(rawConfig[field], scope, onMissing, limit)
  return rendered
}

/** `value`'s size, measured without serializing it, within `maxBytes`; a NodeError naming `what` when it cannot be stored. */
function storableBytes (sizer: JsonSizer, what: string, value: unknown, maxBytes: number): number {
  let bytes: number
  try {
    bytes = sizer.measure(value, maxBytes)
  } catch (err) {
    if (err instanceof UnserializableValueError) throw new NodeError(`${what} cannot be stored: ${err.message}`)
    throw err
  }
  if (bytes > maxBytes) throw new NodeError(`${what} exceeds ${maxBytes} bytes`)
  return bytes
}

export interface NodeExecutionOptions {
  nodes: NodeDependencies
  control: RunControl
  credentials: CredentialResolver
  /** While a node runs longer than this, whether the run is still this execution's is checked this often. */
  cancelPollMs: number
  /** NODE_OUTPUT_MAX_BYTES: a node's output, and its config once rendered. */
  nodeOutputMaxBytes: number
  /** RUN_RESULT_MAX_BYTES: the run's result once a node's output is added. */
  runResultMaxBytes: number
}

/**
 * One node of an execution, whole: its credentials, its config rendered, its attempts within
 * their time limits and retries (attempts.ts, retry.ts), watched for a cancel or a takeover
 * (cancellation.ts), and its output checked to be storable.
 */
export function createNodeExecution (options: NodeExecutionOptions) {
  const { nodeOutputMaxBytes, runResultMaxBytes } = options

  /**
   * Checks that a node's output can be stored: it serializes, within NODE_OUTPUT_MAX_BYTES, and
   * the run's result with it within RUN_RESULT_MAX_BYTES. Measured without serializing, so an
   * output that would take gigabytes fails at once rather than exhausting the worker.
   * `resultSize.bytes` is the result's size so far: a new key adds to it, so a node costs the
   * size of its output, not of the whole result (undefined: not measurable, the whole result is
   * measured and its error reported).
   */
  function checkStorable (nodeId: string, output: unknown, { result, sizer, resultSize }: Execution): void {
    storableBytes(sizer, 'Node output', output, nodeOutputMaxBytes)
    if (resultSize.bytes === undefined || nodeId in result || output === undefined) {
      resultSize.bytes = storableBytes(sizer, 'Run result', { ...result, [nodeId]: output }, runResultMaxBytes)
      return
    }
    // The output one level down, as it is in the result (its depth counts); then its entry added to the result's size.
    const entryBytes = (Object.keys(result).length > 0 ? 1 : 0) + jsonStringBytes(nodeId) + 1 + storableBytes(sizer, 'Run result', [output], runResultMaxBytes) - 2
    if (resultSize.bytes + entryBytes > runResultMaxBytes) throw new NodeError(`Run result exceeds ${runResultMaxBytes} bytes`)
    resultSize.bytes += entryBytes
  }

  async function executeWithSecrets (execution: Execution, node: WorkflowNode, secrets: NodeSecrets, sendTraceparent: boolean): Promise<NodeResult> {
    const { run, pending, result, sizer } = execution
    const definition = nodeDefinition(node.type)
    if (definition === undefined) throw new NodeError(`Unknown node type: ${node.type}`)
    const log = (level: LogLevel, message: string): void => { pending.lines.push({ nodeId: node.id, level, message: secrets.redact(message), at: new Date() }) }
    // A checkpoint before the node acts: what is pending (earlier pure nodes), the step's lines so far and
    // `message`; with `progress`, the node's output so far, which an attempt after this one reads as its own.
    const beforeEffect = async (message: string, progress?: unknown): Promise<void> => {
      log('INFO', message)
      if (progress !== undefined) {
        const stored = secrets.redact(progress)
        // Bounded as the node's output is.
        storableBytes(sizer, 'Node output', stored, nodeOutputMaxBytes)
        pending.outputs[node.id] = stored
        result[node.id] = stored
      }
      await execution.writer.beforeEffect(execution, node.id)
    }
    const rawConfig = node.config ?? {}
    let missing = 0
    const onMissing = (path: string): void => {
      if (++missing > MAX_MISSING_PATH_LINES) return
      const quoted = path.length > MAX_QUOTED_PATH_LENGTH ? `${path.slice(0, MAX_QUOTED_PATH_LENGTH)}…` : path
      log('WARN', `Template path not found: ${quoted}`)
    }
    const scope = secrets.templateScope === undefined ? result : { ...result, credentials: secrets.templateScope }
    const config = renderConfig(definition, rawConfig, scope, onMissing, { maxBytes: nodeOutputMaxBytes, sizer })
    if (missing > MAX_MISSING_PATH_LINES) log('WARN', `Template paths not found: ${missing - MAX_MISSING_PATH_LINES} more`)
    const policy = retryPolicyOf(definition, config)
    const schedule = retrySchedule(policy)
    const pure = definition.traits.pure
    // Why the next attempt is not made although attempts were left, said once per failure.
    const decide = (retryAfterMs?: number): RetryDecision => {
      const decision = schedule.decide(retryAfterMs)
      if (!decision.retry && decision.reason !== undefined) log('WARN', `Not retried: ${decision.reason}`)
      return decision
    }
    const attempt = async (nodeSignal: AbortSignal): Promise<NodeResult> => await definition.execute({
      node,
      config,
      rawConfig,
      run: { id: run.id, workflowId: run.workflowId, userId: run.userId, triggerData: run.triggerData, rawBody: run.rawBody, depth: run.depth },
      credential: secrets.credential,
      result,
      log,
      beforeEffect,
      signal: nodeSignal,
      deps: options.nodes,
      control: options.control,
      flow: flowContext(execution.graph, node, definition.traits.flow),
      attempt: schedule.retries + 1,
      mayRetry: (retryAfterMs) => decide(retryAfterMs).retry,
      idempotencyKey: `${run.id}:${encodeURIComponent(node.id)}`,
      sendTraceparent
    })
    /** Attempts until one succeeds, fails for good, or its retries are spent; `nodeSignal` stops the waits between them. */
    const attempts = async (nodeSignal: AbortSignal): Promise<NodeResult> => {
      for (;;) {
        try {
          return pure ? await pureAttempt(policy.timeoutMs, attempt) : await timedAttempt(policy.timeoutMs, nodeSignal, attempt)
        } catch (err) {
          if (!(err instanceof RetryableNodeError)) throw err
          const decision = decide(err.retryAfterMs)
          if (!decision.retry) throw err
          // A retry waits: a run not claimed yet is claimed first, with what it did, so that nothing runs again.
          await execution.writer.beforeWait(execution, node.id)
          log('WARN', `${err.message}; retrying in ${decision.delayMs}ms (${schedule.retries + 1} of ${policy.attempts - 1})`)
          schedule.record(decision.delayMs)
          // A pure node waits on nothing but this: the claim is watched only while it waits.
          await (pure ? watchingClaim(execution, options.cancelPollMs, async (waitSignal) => { await pause(decision.delayMs, waitSignal) }) : pause(decision.delayMs, nodeSignal))
        }
      }
    }
    // A pure node waits on nothing: no poll of the run's claim, no timer.
    const outcome = pure ? await attempts(neverAborted) : await watchingClaim(execution, options.cancelPollMs, attempts)
    const output = secrets.redact(outcome.output)
    checkStorable(node.id, output, execution)
    if (outcome.outputs === undefined) return { ...outcome, output }
    const outputs = secrets.redact(outcome.outputs)
    for (const [id, added] of Object.entries(outputs)) checkStorable(id, added, execution)
    return { ...outcome, output, outputs }
  }

  /**
   * Executes `node` in `execution`: its result, or what it failed with (credential values the
   * node could see redacted from the message). A ClaimLostError says its step was refused.
   */
  return async function executeNode (execution: Execution, node: WorkflowNode, sendTraceparent: boolean): Promise<NodeResult> {
    const loading = performance.now()
    const secrets = await options.credentials.forNode(execution.run.userId, node)
    execution.pending.waitedMs += performance.now() - loading
    try {
      return await executeWithSecrets(execution, node, secrets, sendTraceparent)
    } catch (err) {
      // What a node failed with may quote what it sent (a header, a URL).
      const message = errorMessage(err)
      const redacted = secrets.redact(message)
      throw redacted === message ? err : new NodeError(redacted)
    }
  }
}
