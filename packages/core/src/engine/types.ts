import type { Dispatcher } from 'undici'
import type { AskWake, ChatAsks } from '../chat/asks.ts'
import type { AgentStore } from './agents.ts'
import type { EventWaits } from './event-waits.ts'
import type { ChatSender } from '../chat/sender.ts'
import type { CredentialType } from '../db/schema/credentials.ts'
import type { LogLevel } from '../db/schema/runs.ts'
import type { CodeSandboxPool } from './sandbox/pool.ts'
import type { WorkflowNode } from '../db/schema/workflows.ts'
import type { ChildRuns } from './children.ts'
import type { RunWaits } from './waits.ts'

/** The part of a run a node may read. */
export interface RunInfo {
  id: string
  workflowId: string
  /** The workflow owner: chat nodes send from their accounts. */
  userId: string
  triggerData: unknown
  /** The exact bytes of an inbound webhook request, for verify_signature. */
  rawBody: Buffer | null
  /** How many parents above it: a run started by a trigger is 0. */
  depth: number
}

/**
 * What nodes that start runs or wait use (run_workflow, foreach, approval, ask): the run's
 * children, approvals and asks (engine/README.md, "Child runs", "Waits and resumes").
 */
export interface RunControl {
  children: ChildRuns
  waits: Pick<RunWaits, 'get' | 'open' | 'expire'>
  asks: Omit<ChatAsks, 'take' | 'exit'>
  eventWaits: EventWaits
  /** The ai_agent node's workflow tools and memory. */
  agents: AgentStore
  /** Wakes another waiting run (an ask it lost to a newer one). */
  wake: (run: AskWake) => Promise<void>
  limits: {
    /** SUBWORKFLOW_MAX_DEPTH: levels of children below a run started by a trigger. */
    subworkflowMaxDepth: number
    /** FOREACH_MAX_ITEMS: the items one foreach node runs. */
    foreachMaxItems: number
    /** NODE_OUTPUT_MAX_BYTES: what a node collecting its children's outputs reads of them at most. */
    nodeOutputMaxBytes: number
  }
}

/** What executors need from outside the run. */
export interface NodeDependencies {
  chat: ChatSender
  /** The shared undici dispatcher of http_request (address filtering and redirects built in). */
  http: Dispatcher
  /** The worker's pool of code sandboxes (sandbox/pool.ts), which code nodes run in. */
  code: Pick<CodeSandboxPool, 'run'>
  /** The model provider of ai_generate and ai_reply; null when no model is configured (AI_MODEL). */
  ai: NodeModelProvider | null
}

/** A tool call the model made: `arguments` is its JSON text as written, not yet trusted. */
export interface NodeModelToolCall {
  id: string
  name: string
  arguments: string
}

/** One message of what a node asks the model: an ai_agent's conversation also holds its tool calls and their results. */
export type NodeModelMessage =
  | { role: 'system' | 'user', content: string }
  | { role: 'assistant', content: string | null, tool_calls?: Array<{ id: string, type: 'function', function: { name: string, arguments: string } }> }
  | { role: 'tool', tool_call_id: string, content: string }

/** A tool the model may call (Chat Completions' function tool). */
export interface NodeModelTool {
  type: 'function'
  function: { name: string, description: string, parameters: Record<string, unknown> }
}

export interface NodeModelRequest {
  model: string
  messages: NodeModelMessage[]
  tools?: NodeModelTool[]
  /** A JSON Schema the answer must follow (the provider's structured output). */
  jsonSchema?: Record<string, unknown>
  maxOutputTokens: number
  signal?: AbortSignal
}

export interface NodeModelAnswer {
  /** The model's text: data, never instructions to the service. */
  content: string | null
  /** The tools it called, when the request offered some. */
  toolCalls?: NodeModelToolCall[]
  model: string
  tokensIn: number
  tokensOut: number
}

/** Why a model call failed (`kind` on what `complete` throws): the first three may pass. */
export type NodeModelFailureKind = 'rate_limited' | 'unavailable' | 'timeout' | 'refused' | 'too_large' | 'aborted'

/**
 * The model provider the ai nodes call (README, Node types: AI). The engine declares it and the
 * worker passes the assistant's client in (assistant/model.ts), as it passes the chat sender: the
 * engine never imports the assistant. `complete` retries 429 and 5xx answers itself and fails with
 * an Error whose `kind` is a NodeModelFailureKind.
 */
export interface NodeModelProvider {
  /** AI_MODEL: the model a node asks unless it names another. */
  model: string
  /** AI_MAX_OUTPUT_TOKENS: the most a node may let the model write in one answer. */
  maxOutputTokens: number
  /** AI_HISTORY_MAX_CHARS: what ai_reply gives the model of a conversation at most. */
  historyMaxChars: number
  complete: (request: NodeModelRequest) => Promise<NodeModelAnswer>
}

/** The credential a node names in its `credential` field, decrypted for its executor. */
export interface NodeCredential {
  name: string
  type: CredentialType
  data: Readonly<Record<string, string>>
}

/** What a node may use of its owner's credentials, and how their values are kept out of what is stored. */
export interface NodeSecrets {
  /** `credentials` in the node's template scope (name → fields); absent when the node uses none in templates. */
  templateScope?: Record<string, Readonly<Record<string, string>>>
  credential?: NodeCredential
  /** `value` with every credential value the node could see, in every string inside it, replaced by a marker. */
  redact: <T>(value: T) => T
}

/** Loads the credentials a node refers to (credentials/vault.ts); the engine knows nothing of where they are kept. */
export interface CredentialResolver {
  forNode: (userId: string, node: WorkflowNode) => Promise<NodeSecrets>
}

export interface NodeContext {
  node: WorkflowNode
  /** The node's config with every template rendered against `result`. */
  config: Record<string, unknown>
  /** The config as the author wrote it, for fields that are paths rather than templates. */
  rawConfig: Record<string, unknown>
  run: RunInfo
  /** The credential of the node's `credential` field, when it has one. */
  credential?: NodeCredential
  /** triggerData plus the output of every node that ran so far. */
  result: Readonly<Record<string, unknown>>
  /** Adds a line to the run's logs under this node (written when the node ends). */
  log: (level: LogLevel, message: string) => void
  /**
   * Call right before each outside effect (a request, a message): writes the
   * node's lines so far and `message` (INFO) to the run's log now, so that an
   * attempt shows even if the worker dies during it. Throws, and the node must
   * not act, when the run is no longer this execution's (cancelled, or claimed
   * by another worker). `progress`, when given, is written as the node's output so far: a node
   * of several steps (ai_agent) finds it in `result[node.id]` when it runs again (a retry, a
   * takeover after a crash), so that no ended step is made again.
   */
  beforeEffect: (message: string, progress?: unknown) => Promise<void>
  /** Aborted when the run is cancelled, the worker lost the job, or the attempt's `timeoutMs` passed. */
  signal: AbortSignal
  deps: NodeDependencies
  control: RunControl
  /** For a parallel node its merge, for a merge its parallel (engine/README.md, "Branches and joins"). */
  flow?: { join?: WorkflowNode, fork?: WorkflowNode }
  /** This attempt of the node, from 1 (its `retry`). */
  attempt: number
  /**
   * Whether a failure that may pass, thrown now as a RetryableNodeError, would be retried
   * (after `retryAfterMs` at least, when the other side asked for a wait). When false this is
   * the node's last attempt: a node that answers differently on its last attempt asks.
   */
  mayRetry: (retryAfterMs?: number) => boolean
  /**
   * `<runId>:<nodeId>` (the node id percent-encoded): the same for every attempt of this node
   * in this run (its retries, a job retried after an error, a takeover), for receivers to
   * deduplicate outside effects on.
   */
  idempotencyKey: string
  /**
   * An outgoing request of this node sends its W3C traceparent (the span of its HTTP call, a child
   * of the node's), while tracing is on and HTTP_REQUEST_TRACEPARENT allows it.
   */
  sendTraceparent?: boolean
}

export interface NodeResult {
  /** Stored as `result[nodeId]`. */
  output: unknown
  /** The node the node chose to continue with (condition). */
  next?: string | null
  /** Edge `sourceHandle` values that stand for the chosen branch. */
  handles?: string[]
  /** Suspends the run (WAITING) until then; the node runs again when it resumes. */
  suspendUntil?: Date
  /**
   * Names this suspension's timer among the node's own, for a node that suspends more than once
   * (each time it is woken early): its timer job is added even when an earlier one ran.
   */
  suspendKey?: string
  /** The run ends (SUCCESS) after this node, whatever follows it (an approval rejected with nowhere to go). */
  ends?: boolean
  /** Events of the outbox the node wrote, dispatched once its step is written. */
  events?: string[]
  /** Outputs of other nodes to add to the run's result (a parallel's branches' nodes), by node id. */
  outputs?: Record<string, unknown>
}

export interface NodeExecutor<T extends string = string> {
  type: T
  execute: (context: NodeContext) => Promise<NodeResult>
}

/**
 * A node failure: the run ends FAILED with `message` as its error. Anything
 * else an executor throws is treated the same way; this class only marks
 * errors whose text is written for the workflow author.
 */
export class NodeError extends Error {
  override name = 'NodeError'
}

/**
 * A failure that may pass (the network, a time-out, a 5xx or 429 answer, a platform's
 * throttling): the engine makes another attempt as the node's `retry` allows, and otherwise
 * fails the node with this message.
 */
export class RetryableNodeError extends NodeError {
  override name = 'RetryableNodeError'
  /** The wait the other side asked for (Retry-After), in ms. */
  readonly retryAfterMs?: number

  constructor (message: string, options: { retryAfterMs?: number, cause?: unknown } = {}) {
    super(message, { cause: options.cause })
    this.retryAfterMs = options.retryAfterMs
  }
}
