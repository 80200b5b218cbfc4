/**
 * What the public API answers and accepts, derived from the routes' TypeBox schemas
 * (apps/api/src/routes/**\/schemas.ts): a schema changed there fails the console's typecheck.
 * The api's imports are type-only, so nothing of the api reaches the browser bundle (docs/architecture.md, apps/console).
 */
import { TRIGGER_TYPES } from '@switchboard/core/db/values'
import type { Static, TSchema } from 'typebox'
import type { ChatChange } from '@switchboard/core/chat'
import type { MESSAGE_STATUSES } from '@switchboard/core/db'
import type { CreateApiKeyBody, CreatedApiKey, ApiKey as ApiKeySchema } from '../../api/src/routes/api/auth/api-keys/schemas.ts'
import type { ChangePasswordBody, LoginBody, LoginResponse } from '../../api/src/routes/api/auth/schemas.ts'
import type { PendingApproval as PendingApprovalSchema } from '../../api/src/routes/api/automation/approvals/schemas.ts'
import type { CreateCredentialBody, Credential as CredentialSchema, UpdateCredentialBody } from '../../api/src/routes/api/automation/credentials/schemas.ts'
import type { NodeTypes } from '../../api/src/routes/api/automation/node-types/schemas.ts'
import type { QueueCounts } from '../../api/src/routes/api/automation/queues/schemas.ts'
import type { ListRunsQuery, ResumeRunBody, RetryRunBody, Run as RunSchema, RunAccepted as RunAcceptedSchema, RunLog as RunLogSchema, RunResumed, RunRetried as RunRetriedSchema, RunStats as RunStatsSchema, RunSummary as RunSummarySchema } from '../../api/src/routes/api/automation/runs/schemas.ts'
import type {
  CreateWorkflowBody, ListWorkflowsQuery, RecentRun as RecentRunSchema, TestCaptureAnswer, TestRunBody, UpdateWorkflowBody, WorkflowDetail, WorkflowNode as WorkflowNodeSchema,
  WorkflowSummary as WorkflowSummarySchema, WorkflowVersion as WorkflowVersionSchema, WorkflowVersionSummary as WorkflowVersionSummarySchema
} from '../../api/src/routes/api/automation/workflows/schemas.ts'
import type { ChatAccount as ChatAccountSchema, CreateChatAccountBody, UpdateChatAccountBody } from '../../api/src/routes/api/chat/accounts/schemas.ts'
import type { Agent as AgentSchema } from '../../api/src/routes/api/chat/agents/schemas.ts'
import type { AssistantSettingsBody, AssistantSettingsView } from '../../api/src/routes/api/chat/assistant/schemas.ts'
import type { Broadcast as BroadcastSchema, BroadcastRecipient as BroadcastRecipientSchema, CreateBroadcastBody } from '../../api/src/routes/api/chat/broadcasts/schemas.ts'
import type { CannedReply as CannedReplySchema, NewCannedReplyBody } from '../../api/src/routes/api/chat/canned-replies/schemas.ts'
import type { ConsentSettingsBody, ConsentSettingsView } from '../../api/src/routes/api/chat/consent/schemas.ts'
import type { LabelCount as LabelCountSchema } from '../../api/src/routes/api/chat/labels/schemas.ts'
import type { KnowledgeSearchBody, KnowledgeSearchResult, KnowledgeSourceBody, KnowledgeSourceDetail, KnowledgeSourceList, PdfQuery } from '../../api/src/routes/api/chat/knowledge/schemas.ts'
import type { Contact as ContactSchema, ContactsImportResult, ContactsQuery, UpdateContactBody } from '../../api/src/routes/api/chat/contacts/schemas.ts'
import type { SandboxInboundAccepted, SandboxInboundBody } from '../../api/src/routes/api/chat/sandbox/schemas.ts'
import type {
  ApproveDraftBody, AssistantTurn as AssistantTurnSchema, ChatMessage as ChatMessageSchema, Conversation as ConversationSchema, ConversationNote as ConversationNoteSchema, ConversationsQuery,
  ConversationWithMessages, NoteBody, UpdateConversationBody
} from '../../api/src/routes/api/chat/conversations/schemas.ts'
import type { SendTemplateBody, SendTextBody } from '../../api/src/routes/api/chat/send/schemas.ts'
import type { ReactionBody } from '../../api/src/routes/api/chat/messages/schemas.ts'
import type { CreateTemplateBody, StoredTemplate as StoredTemplateSchema, Templates } from '../../api/src/routes/api/chat/templates/schemas.ts'
import type { CreateUserBody, UpdateUserBody, User as UserSchema } from '../../api/src/routes/api/users/schemas.ts'
import type { AuditEntry as AuditEntrySchema, ListAuditQuery } from '../../api/src/routes/api/audit/schemas.ts'
import type { Check } from '../../api/src/routes/health/schemas.ts'

/** A value as `JSON.parse` gives it back: the api's dates (Timestamp, apps/api/src/schemas/common.ts) arrive as ISO strings. */
type Parsed<T> = T extends Date
  ? string
  : T extends Array<infer Item> ? Array<Parsed<Item>> : T extends object ? { [Key in keyof T]: Parsed<T[Key]> } : T

/** What a route answers with the schema. */
type Answer<Schema extends TSchema> = Parsed<Static<Schema>>
/** What a route accepts with the schema. */
type Body<Schema extends TSchema> = Static<Schema>
/** A list's query as the console's addresses hold it: the parameters the route's schema names, with the text or number the address gives. */
type Query<Schema extends TSchema> = { [Key in keyof Static<Schema>]?: string | number }

export type TriggerType = WorkflowSummary['triggerType']
/** Where the pickers list each trigger type: manual first, the one a new workflow starts with. */
const PICKER_RANK: Record<TriggerType, number> = { MANUAL: 0, WEBHOOK: 1, CRON: 2, EVENT: 3, KEYWORD: 4, AGENT: 5 }
export const TRIGGER_TYPE_CHOICES = [...TRIGGER_TYPES].sort((one, other) => PICKER_RANK[one] - PICKER_RANK[other])
export type Domain = WorkflowSummary['domain']
export type RunStatus = RunSummary['status']

/** One row of the audit log (GET /api/audit), and the list's filters. */
export type AuditEntry = Answer<typeof AuditEntrySchema>
export type AuditFilter = Query<typeof ListAuditQuery>

/** A customer of a chat number (GET /api/chat/contacts), the list's filters, a change and an import's outcome. */
export type Contact = Answer<typeof ContactSchema>
export type ContactFilter = Query<typeof ContactsQuery>
export type ContactChanges = Body<typeof UpdateContactBody>
export type ContactsImported = Answer<typeof ContactsImportResult>
/** A label of a number with how many of its conversations and contacts carry it (GET /api/chat/labels). */
export type LabelCount = Answer<typeof LabelCountSchema>
/** A number's opt-out and opt-in keywords and their confirmations (GET/PUT /api/chat/accounts/:id/consent). */
export type ConsentSettings = Answer<typeof ConsentSettingsView>
export type ConsentSettingsInput = Body<typeof ConsentSettingsBody>

/** A user as GET /api/users lists them. */
export type User = Answer<typeof UserSchema>
/** What the login and a password change answer: the token, and the signed-in user. */
export type Login = Answer<typeof LoginResponse>
/** The signed-in user: no createdAt or quotas, unlike a user of GET /api/users. */
export type SessionUser = Login['user']
export type LoginInput = Body<typeof LoginBody>
export type PasswordChange = Body<typeof ChangePasswordBody>
export type NewUser = Body<typeof CreateUserBody>
export type UserChanges = Body<typeof UpdateUserBody>
export type UserRole = NonNullable<NewUser['role']>

/** A key as GET /api/auth/api-keys lists it: never its secret (README, API keys). */
export type ApiKey = Answer<typeof ApiKeySchema>
export type NewApiKey = Body<typeof CreateApiKeyBody>
export type ApiKeyScope = NewApiKey['scopes'][number]
/** A key just created: its secret, shown this once. */
export type CreatedKey = Answer<typeof CreatedApiKey>

export type WorkflowNode = Answer<typeof WorkflowNodeSchema>

/** The api's description of a node type; its config schema is any JSON Schema object. */
type NodeTypeAnswer = Answer<typeof NodeTypes>['nodeTypes'][number]
/** A node type as GET /api/automation/node-types describes it (docs/nodes.md), its config schema read as `JsonSchema`. */
export type NodeTypeInfo = Omit<NodeTypeAnswer, 'configSchema' | 'example'> & { configSchema: JsonSchema, example: Record<string, unknown> }

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

export type WorkflowSummary = Answer<typeof WorkflowSummarySchema>
export type RecentRun = Answer<typeof RecentRunSchema>
export type Workflow = Answer<typeof WorkflowDetail>
/** The writable fields of a workflow as POST takes them; PATCH takes any of them (WorkflowChanges). */
export type WorkflowInput = Body<typeof CreateWorkflowBody>
export type WorkflowChanges = Body<typeof UpdateWorkflowBody>
export type TestRunInput = Body<typeof TestRunBody>
/** Where listening for a test request stands (README, The workflow builder: Listen for a test request). */
export type TestCapture = Answer<typeof TestCaptureAnswer>
export type WorkflowFilter = Query<typeof ListWorkflowsQuery>

/** A version as the history lists it: who saved it and when. */
export type WorkflowVersionSummary = Answer<typeof WorkflowVersionSummarySchema>
export type WorkflowVersion = Answer<typeof WorkflowVersionSchema>

export type Credential = Answer<typeof CredentialSchema>
export type NewCredential = Body<typeof CreateCredentialBody>
export type CredentialChanges = Body<typeof UpdateCredentialBody>
export type CredentialType = NewCredential['type']

export type RunSummary = Answer<typeof RunSummarySchema>
export type RunLog = Answer<typeof RunLogSchema>
export type Run = Answer<typeof RunSchema>
export type RunAccepted = Answer<typeof RunAcceptedSchema>
export type RunFilter = Query<typeof ListRunsQuery>
export type RunRetried = Answer<typeof RunRetriedSchema>
export type RetryInput = Body<typeof RetryRunBody>
export type ApprovalInput = Body<typeof ResumeRunBody>
export type ApprovalDecided = Answer<typeof RunResumed>
export type ApprovalDecision = ApprovalDecided['decision']

/** A run waiting at an approval node for the viewer's decision (GET /api/automation/approvals). */
export type PendingApproval = Answer<typeof PendingApprovalSchema>

export type QueueCounters = Answer<typeof QueueCounts>['queues'][number]
export type RunStats = Answer<typeof RunStatsSchema>

export type ChatAccount = Answer<typeof ChatAccountSchema>
export type NewChatAccount = Body<typeof CreateChatAccountBody>
export type ChatAccountChanges = Body<typeof UpdateChatAccountBody>
/** A customer's message played on a sandbox number (README, Sandbox numbers), and its answer. */
export type SandboxInbound = Body<typeof SandboxInboundBody>
export type SandboxPlayed = Answer<typeof SandboxInboundAccepted>

export type ChatMessage = Answer<typeof ChatMessageSchema>
/** An outbound message's status as the platform reported it (a draft's status is one of DRAFT_STATUSES instead). */
export type MessageStatus = typeof MESSAGE_STATUSES[number]
/** A draft's status: waiting for staff, rejected by them, or left behind by a newer customer message. */
export type DraftStatus = Exclude<NonNullable<ChatMessage['status']>, MessageStatus>
/** Why the platform failed a message or a broadcast skipped a recipient (`Cancelled`, `Opted out`: no code). */
export type MessageError = NonNullable<ChatMessage['error']>

/** A conversation as the list and GET one answer it: with its latest messages. */
export type Conversation = Answer<typeof ConversationWithMessages>
/** A conversation as PATCH and POST …/read answer it: without messages. */
export type ConversationChanged = Answer<typeof ConversationSchema>
export type ConversationChanges = Body<typeof UpdateConversationBody>
/** `assigned`: `me`, `none` or a user's id; `mentions`: `me`. */
export type ConversationFilter = Query<typeof ConversationsQuery>
/** A private note of staff or a workflow on a conversation, shown in its thread; never sent. */
export type ConversationNote = Answer<typeof ConversationNoteSchema>
export type NoteInput = Body<typeof NoteBody>
export type DraftApproval = Body<typeof ApproveDraftBody>
/** Whether the assistant answers a conversation: not at all, with drafts staff approve, or at once. */
export type AiMode = Conversation['aiMode']

/** Someone a conversation of the account may be assigned to. */
export type Agent = Answer<typeof AgentSchema>

/** A reply staff insert in the reply box by typing `/` and its shortcut. */
export type CannedReply = Answer<typeof CannedReplySchema>
export type CannedReplyInput = Body<typeof NewCannedReplyBody>

/**
 * An event of the inbox's stream: what changed, by id (`resync`: read everything again, no ids). Its
 * schema is words only (apps/api/src/routes/api/chat/events/schemas.ts): the ids are core's ChatChange's, as the route frames them.
 */
export interface ChatEvent { name: string, data: Partial<Pick<ChatChange, 'conversationId' | 'messageId' | 'noteId'>> }

/** What the assistant did for one customer message (GET /api/chat/conversations/:id/turns). */
export type AssistantTurn = Answer<typeof AssistantTurnSchema>

/** An account's assistant (GET /api/chat/accounts/:id/assistant); `effectiveModel` null: off for want of a model. */
export type AssistantSettings = Answer<typeof AssistantSettingsView>
export type AssistantSettingsInput = Body<typeof AssistantSettingsBody>

/** An account's knowledge source (GET /api/chat/accounts/:id/knowledge): indexing, ready or failed with its error. */
export type KnowledgeSource = Answer<typeof KnowledgeSourceList>['sources'][number]
export type KnowledgeSourceStatus = KnowledgeSource['status']
/** A source with its first 200 passages (GET …/knowledge/:sourceId). */
export type KnowledgeSourceWithPassages = Answer<typeof KnowledgeSourceDetail>
/** A source given as JSON (text, Markdown, a URL, FAQ pairs); a PDF is sent as its bytes with `PdfSource`'s title and language. */
export type KnowledgeSourceInput = Body<typeof KnowledgeSourceBody>
export type PdfSource = Body<typeof PdfQuery>
export type KnowledgeLanguage = NonNullable<KnowledgeSourceInput['language']>
export type KnowledgeSearchInput = Body<typeof KnowledgeSearchBody>
/** What a turn would be given for a query (POST …/knowledge/search): none, and `relevant` false, when nothing is relevant. */
export type KnowledgeSearch = Answer<typeof KnowledgeSearchResult>
/** A passage a draft was based on, as its `details.sources` holds it: a search result's source, without its text. */
export type KnowledgeCitation = Pick<KnowledgeSearch['results'][number], 'sourceId' | 'title' | 'heading' | 'page'>

/** GET /health/ready: `details` says what is on and off, for people (`assistant`: `on: model …` or `off: …`). */
export type Readiness = Answer<typeof Check>

export type TextMessage = Body<typeof SendTextBody>
/** The business's reaction to a message (POST /api/chat/messages/:id/reaction): "" removes it. */
export type ReactionInput = Body<typeof ReactionBody>
export type TemplateMessage = Body<typeof SendTemplateBody>

/** A template made here, with the platform's review of it (GET /api/chat/templates?status=all), and a new one. */
export type StoredTemplate = Answer<typeof StoredTemplateSchema>
export type NewTemplate = Body<typeof CreateTemplateBody>
export type TemplateCategory = NewTemplate['category']
export type TemplateButtonType = NonNullable<NewTemplate['components'][number]['buttons']>[number]['type']

/**
 * A template as the api passes it through from the platform: the fields its schema names, and the
 * platform's own the console reads (apps/api/src/routes/api/chat/templates/schemas.ts lets them through).
 */
export type Template = Answer<typeof Templates>[number] & { category?: string, components?: Array<{ type: string, text?: string, buttons?: Array<{ type: string, text?: string }> }> }

export type Broadcast = Answer<typeof BroadcastSchema>
/** A broadcast's state: waiting for its send time, sending, paused, or ended (README, Broadcasts). */
export type BroadcastStatus = Broadcast['status']
export type BroadcastRecipient = Answer<typeof BroadcastRecipientSchema>
/** A recipient's: its send's, then its message's once sent. */
export type RecipientStatus = BroadcastRecipient['status']
/** POST /api/chat/broadcasts: one template, exactly one audience. */
export type BroadcastInput = Body<typeof CreateBroadcastBody>
