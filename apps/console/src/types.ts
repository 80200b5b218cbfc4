/** What the public API answers, as the console reads it (apps/api route schemas). */

export const TRIGGER_TYPES = ['MANUAL', 'WEBHOOK', 'CRON', 'EVENT', 'KEYWORD', 'AGENT'] as const
export type TriggerType = typeof TRIGGER_TYPES[number]
export const DOMAINS = ['GENERAL', 'CHAT', 'PROJECTS', 'CLIENTS', 'AGENTS'] as const
export type Domain = typeof DOMAINS[number]
export const RUN_STATUSES = ['PENDING', 'RUNNING', 'WAITING', 'SUCCESS', 'FAILED', 'CANCELLED'] as const
export type RunStatus = typeof RUN_STATUSES[number]
export const UNFINISHED: readonly RunStatus[] = ['PENDING', 'RUNNING', 'WAITING']

export interface User { id: string, email: string, role: string, createdAt?: string }

/** A key as GET /api/auth/api-keys lists it: never its secret (README, API keys). */
export interface ApiKey {
  id: string
  userId: string
  name: string
  hint: string
  scopes: string[]
  workflowIds: string[] | null
  expiresAt: string | null
  lastUsedAt: string | null
  revokedAt: string | null
  createdAt: string
}

export interface WorkflowNode { id: string, type: string, config?: Record<string, unknown>, next?: string, position?: { x: number, y: number } }

/** A node type as GET /api/automation/node-types describes it (docs/nodes.md). */
export interface NodeTypeInfo {
  type: string
  /** Where the palette lists it; the api lists types by category, in the palette's order. */
  category: string
  description: string
  configSchema: JsonSchema
  example: Record<string, unknown>
  traits: { pure: boolean, links: Array<{ field: string, kind: 'node' | 'map' | 'list' }> }
}

/** The part of JSON Schema the console reads of a node type's config schema. */
export interface JsonSchema {
  type?: string | string[]
  description?: string
  default?: unknown
  enum?: unknown[]
  examples?: unknown[]
  const?: unknown
  anyOf?: JsonSchema[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  items?: JsonSchema
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  minItems?: number
  maxItems?: number
  pattern?: string
}

export interface WorkflowSummary {
  id: string
  name: string
  description: string | null
  triggerType: TriggerType
  triggerConfig: Record<string, unknown>
  isActive: boolean
  runCount: number
  successCount: number
  failureCount: number
  lastRunAt: string | null
  domain: Domain
  tags: string[]
  updatedAt: string
}

export interface RecentRun { id: string, status: RunStatus, durationMs: number | null, startedAt: string | null, completedAt: string | null, createdAt: string }

export interface Schedule { id: string, cronExpression: string, timezone: string, nextRunAt: string | null, lastRunAt: string | null }

export interface Workflow extends WorkflowSummary {
  nodes: WorkflowNode[]
  edges: unknown
  version: number
  /** Sample triggerData for test runs; never used by real triggers. */
  pinnedData: unknown
  createdAt: string
  runs: RecentRun[]
  schedules: Schedule[]
}

/** The writable fields of a workflow (POST and PATCH). */
export interface WorkflowInput {
  name: string
  description: string | null
  triggerType: TriggerType
  triggerConfig: Record<string, unknown>
  domain: Domain
  tags: string[]
  isActive: boolean
  nodes: WorkflowNode[]
  edges: unknown
  pinnedData?: unknown
}

/** A version as the history lists it: who saved it and when. */
export interface WorkflowVersionSummary { version: number, triggerType: TriggerType, createdBy: string | null, restoredFrom: number | null, createdAt: string }

export interface WorkflowVersion extends WorkflowVersionSummary { workflowId: string, triggerConfig: Record<string, unknown>, nodes: WorkflowNode[], edges: unknown }

export interface RunSummary {
  id: string
  workflowId: string
  /** The run whose run_workflow or foreach node started this one; null for a run a trigger started. */
  parentRunId: string | null
  status: RunStatus
  triggerData: unknown
  result: Record<string, unknown>
  error: string | null
  createdAt: string
  startedAt: string | null
  completedAt: string | null
  durationMs: number | null
  /** Started by a test (the builder's "Run to here"). */
  test: boolean
}

export interface RunLog { id: string, nodeId: string | null, level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR', message: string, createdAt: string }

export interface Run extends RunSummary {
  /** The runs its run_workflow and foreach nodes started (GET /api/automation/runs?parentRunId=). */
  childCount: number
  logs: RunLog[]
}

/** A run waiting at an approval node for the viewer's decision (GET /api/automation/approvals). */
export interface PendingApproval {
  runId: string
  workflowId: string
  nodeId: string
  message: string | null
  expiresAt: string
  createdAt: string
}

export type ApprovalDecision = 'approve' | 'reject'

export interface QueueCounters { name: string, error?: string, waiting: number, active: number, completed: number, failed: number, delayed: number }

export interface RunStats { since: string, until: string, bucketSeconds: number, buckets: Array<{ minute: string, counts: Record<RunStatus, number> }> }

export interface ChatAccount {
  id: string
  userId: string
  name: string
  phoneNumberId: string
  businessAccountId: string | null
  displayPhoneNumber: string | null
  isDefault: boolean
  createdAt: string
}

export type MessageStatus = 'sent' | 'delivered' | 'read' | 'failed'
/** The assistant's drafts: waiting for staff, rejected by them, or left behind by a newer customer message. */
export type DraftStatus = 'pending_approval' | 'rejected' | 'stale'

export interface ChatMessage {
  id: string
  direction: 'inbound' | 'outbound'
  type: string
  content: string
  /** A media message's: the platform's media id (its bytes through the api) or the link it was sent from. */
  media: { id?: string, link?: string, mimeType?: string, caption?: string, filename?: string } | null
  status: MessageStatus | DraftStatus | null
  /** A failed message's reason: the platform's first error (131026 undeliverable…); null otherwise. */
  error: MessageError | null
  agentName: string | null
  createdAt: string
}

/** Why the platform failed a message or a broadcast skipped a recipient (`Cancelled`, `Opted out`: no code). */
export interface MessageError { code: number | null, title: string, details: string | null }

/** Whether the assistant answers a conversation: not at all, with drafts staff approve, or at once. */
export const AI_MODES = ['OFF', 'HYBRID', 'AUTO'] as const
export type AiMode = typeof AI_MODES[number]

export interface Conversation {
  id: string
  phone: string
  name: string | null
  lastMessage: string | null
  lastMessageAt: string | null
  unreadCount: number
  isPinned: boolean
  isArchived: boolean
  priority: string
  labels: string[]
  lastIncomingAt: string | null
  aiMode: AiMode
  /** The assistant's drafts waiting for staff. */
  pendingApprovalCount: number
  /** A staff reply or an assignment paused the assistant; setting aiMode resumes it. */
  assistantPaused: boolean
  /** The customer opted out (STOP): only a person's reply after they write again may be sent. */
  optedOut: boolean
  /** Who the conversation is assigned to (a user's id), null when nobody. */
  assignedAgentId: string | null
  messages: ChatMessage[]
}

/** Someone a conversation of the account may be assigned to. */
export interface Agent { id: string, email: string }

/** A reply staff insert in the reply box by typing `/` and its shortcut. */
export interface CannedReply { id: string, shortcut: string, title: string, text: string, createdAt: string, updatedAt: string }
export type CannedReplyInput = Pick<CannedReply, 'shortcut' | 'title' | 'text'>

/** An event of the inbox's stream: what changed, by id (`resync`: read everything again). */
export interface ChatEvent { name: string, data: { conversationId?: string, messageId?: string } }

/** A workflow the assistant ran as a tool during a turn (`runId` null when the call was refused). */
export interface ToolCall { id: string, name: string, workflowId: string | null, runId: string | null, status: string, error?: string }

/** What the assistant did for one customer message (GET /api/chat/conversations/:id/turns). */
export interface AssistantTurn {
  id: string
  messageId: string
  status: 'queued' | 'running' | 'waiting' | 'done' | 'failed'
  outcome: 'drafted' | 'sent' | 'superseded' | 'skipped' | 'failed' | null
  attempts: number
  model: string | null
  tokensIn: number
  tokensOut: number
  toolCalls: ToolCall[]
  log: Array<{ at: string, event: string, detail?: Record<string, unknown> }>
  error: string | null
  draftMessageId: string | null
  draftDecision: 'approved' | 'edited' | 'rejected' | 'stale' | null
  createdAt: string
  finishedAt: string | null
}

/** An account's assistant (GET /api/chat/accounts/:id/assistant); `effectiveModel` null: off for want of a model. */
export interface AssistantSettings { instructions: string, answerAlways: boolean, model: string | null, effectiveModel: string | null }

/** GET /health/ready: `details` says what is on and off, for people (`assistant`: `on: model …` or `off: …`). */
export interface Readiness { status: string, checks?: Record<string, string>, details?: Record<string, string> }

export interface Template {
  id: string
  name: string
  language: string
  status: string
  category?: string
  components?: Array<{ type: string, text?: string }>
}

/** A broadcast's state: waiting for its send time, sending, paused, or ended (README, Broadcasts). */
export type BroadcastStatus = 'scheduled' | 'sending' | 'paused' | 'cancelled' | 'done'
/** A recipient's: its send's, then its message's once sent. */
export const RECIPIENT_STATUSES = ['queued', 'sent', 'delivered', 'read', 'failed', 'skipped'] as const
export type RecipientStatus = typeof RECIPIENT_STATUSES[number]

export interface Broadcast {
  id: string
  accountId: string
  templateName: string
  lang: string
  ratePerSecond: number
  sendAt: string
  status: BroadcastStatus
  total: number
  /** Sends started again after a worker stopped during them: each may have reached its customer twice. */
  repeated: number
  counts: Record<RecipientStatus, number>
  createdAt: string
  updatedAt: string
  finishedAt: string | null
}

export interface BroadcastRecipient {
  position: number
  phone: string
  status: RecipientStatus
  attempts: number
  wamid: string | null
  error: MessageError | null
  sentAt: string | null
}

/** POST /api/chat/broadcasts: one template, exactly one audience. */
export interface BroadcastInput {
  templateName: string
  lang: string
  ratePerSecond: number
  sendAt?: string
  recipients?: Array<{ to: string, components?: unknown[] }>
  label?: string
  components?: unknown[]
}
