import { clearSession, loadSession } from './session.ts'
import type {
  Agent, ApiKey, ApprovalDecided, AuditEntry, AuditFilter, ApprovalDecision, ApprovalInput, AssistantSettings, AssistantSettingsInput, ConsentSettings, ConsentSettingsInput, Contact, ContactChanges, ContactFilter, ContactsImported, LabelCount, NewTemplate, StoredTemplate, AssistantTurn, Broadcast, BroadcastInput, BroadcastRecipient, CannedReply, CannedReplyInput, ChatAccount, ChatAccountChanges, ChatEvent, ChatMessage,
  KnowledgeSearch, KnowledgeSearchInput, KnowledgeSource, KnowledgeSourceInput, KnowledgeSourceWithPassages, PdfSource,
  Conversation, ConversationChanged, ConversationChanges, ConversationFilter, ConversationNote, CreatedKey, Credential, CredentialChanges, DraftApproval, Login, LoginInput, NewApiKey, NewChatAccount, NewCredential, NewUser, NodeTypeInfo, NoteInput, PasswordChange, PendingApproval, QueueCounters, Readiness, RetryInput, Run, RunAccepted, RunFilter, RunRetried, RunStats, SandboxInbound, SandboxPlayed,
  RunSummary, Template, TemplateMessage, TestCapture, TestRunInput, TextMessage, User, UserChanges, Workflow, WorkflowChanges, WorkflowFilter, WorkflowInput, WorkflowSummary, WorkflowVersion, WorkflowVersionSummary, ReactionInput
} from './types.ts'

/** An error answer of the api, in its error body `{statusCode, code, message}` (README, Conventions). */
export class ApiError extends Error {
  constructor (readonly status: number, readonly code: string, message: string) {
    super(message)
  }
}

let unauthorized: () => void = () => {}

/** What to do when the api answers 401: the token expired or its user was deleted. */
export function onUnauthorized (handler: () => void): void {
  unauthorized = handler
}

interface RequestOptions {
  body?: unknown
  /** X-Account-Id: the chat account a /api/chat call acts for. */
  accountId?: string
  /** Requests without the token (login). */
  anonymous?: boolean
  /** Ends the request instead of the time-out: a stream that stays open (the inbox's events). */
  signal?: AbortSignal
  /** A CSV body (a contacts import) instead of JSON. */
  csv?: Blob
  /** A PDF's bytes (a knowledge source) instead of JSON. */
  pdf?: Blob
}

/** A request bounded in time, so that a hung api shows an error instead of a spinner forever. */
const REQUEST_TIMEOUT_MS = 15_000
/** A contacts import: up to 10 MiB, which the api reads as it streams. */
const IMPORT_TIMEOUT_MS = 300_000
/** A knowledge source's PDF: up to 20 MiB, sent whole before the api answers. */
const PDF_TIMEOUT_MS = 300_000
/** A message's media: up to CHAT_MEDIA_MAX_BYTES, which the api streams within its own CHAT_MEDIA_TIMEOUT_MS (120 s by default). */
const MEDIA_TIMEOUT_MS = 150_000

const networkError = (err: unknown): ApiError =>
  new ApiError(0, 'NETWORK', err instanceof DOMException && err.name === 'TimeoutError' ? 'The api did not answer in time' : 'The api cannot be reached')

async function send (method: string, path: string, options: RequestOptions, timeoutMs: number): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  if (options.csv !== undefined) headers['content-type'] = 'text/csv'
  if (options.pdf !== undefined) headers['content-type'] = 'application/pdf'
  if (options.accountId !== undefined) headers['x-account-id'] = options.accountId
  const session = options.anonymous === true ? null : loadSession()
  if (session !== null) headers.authorization = `Bearer ${session.token}`
  try {
    return await fetch(path, {
      method,
      headers,
      body: options.csv ?? options.pdf ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
      signal: options.signal ?? AbortSignal.timeout(timeoutMs)
    })
  } catch (err) {
    throw networkError(err)
  }
}

/** The JSON of an answer, or undefined when it has none. */
async function jsonOf (res: Response): Promise<any> {
  const text = await res.text()
  try {
    return text === '' ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The api's refusal as an error; a 401 ends the session. */
function refusal (res: Response, body: any, options: RequestOptions): ApiError {
  if (res.status === 401 && options.anonymous !== true) {
    clearSession()
    unauthorized()
  }
  return new ApiError(res.status, body?.code ?? 'ERROR', body?.message ?? `${res.status} ${res.statusText}`)
}

async function call<T> (method: string, path: string, options: RequestOptions = {}, timeoutMs = REQUEST_TIMEOUT_MS): Promise<T> {
  const res = await send(method, path, options, timeoutMs)
  if (res.status === 204) return undefined as T
  const body = await jsonOf(res)
  if (res.ok) return body as T
  throw refusal(res, body, options)
}

/** Bytes the api answers (a message's media) as a Blob: they need the token, so no <img> or link can fetch them itself. */
async function bytes (path: string, options: RequestOptions): Promise<Blob> {
  const res = await send('GET', path, options, MEDIA_TIMEOUT_MS)
  if (!res.ok) throw refusal(res, await jsonOf(res), options)
  try {
    return await res.blob()
  } catch (err) {
    // The api cuts a media that passes its size or time bound: what came is not the whole of it.
    throw err instanceof DOMException && err.name === 'TimeoutError' ? networkError(err) : new ApiError(0, 'NETWORK', 'The media arrived cut short')
  }
}

const query = (params: Record<string, string | number | boolean | undefined>): string => {
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(key, String(value))
  const text = search.toString()
  return text === '' ? '' : `?${text}`
}

/**
 * GET /api/chat/events, read with fetch because an EventSource cannot send the token: `onOpen` once
 * it is open, then `onEvent` for each event until the stream ends (resolves) or breaks (rejects).
 */
async function chatEvents (accountId: string, signal: AbortSignal, onOpen: () => void, onEvent: (event: ChatEvent) => void): Promise<void> {
  const options: RequestOptions = { accountId, signal }
  const res = await send('GET', '/api/chat/events', options, 0)
  if (!res.ok || res.body === null) throw refusal(res, await jsonOf(res), options)
  onOpen()
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
  let pending = ''
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    pending += chunk.value
    // One event per block; comment lines (`: keep-alive`) carry none.
    for (let end = pending.indexOf('\n\n'); end >= 0; end = pending.indexOf('\n\n')) {
      const block = pending.slice(0, end)
      pending = pending.slice(end + 2)
      const name = /^event: (.+)$/m.exec(block)?.[1]
      if (name !== undefined) onEvent({ name, data: JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? '{}') })
    }
  }
}

/**
 * A template's body with its parameters: the api checks a component's `type` and passes the
 * platform's own fields through (apps/api/src/routes/api/chat/send/schemas.ts).
 */
type BodyComponent = NonNullable<TemplateMessage['components']>[number] & { parameters: Array<{ type: 'text', text: string }> }

const bodyComponent = (parameters: string[]): BodyComponent => ({ type: 'body', parameters: parameters.map((text) => ({ type: 'text', text })) })

export const api = {
  login: async (email: string, password: string) =>
    call<Login>('POST', '/api/auth/login', { body: { email, password } satisfies LoginInput, anonymous: true }),
  /** Ends every earlier token, this one included: the answer carries the next. */
  changePassword: async (currentPassword: string, newPassword: string) =>
    call<Login>('POST', '/api/auth/password', { body: { currentPassword, newPassword } satisfies PasswordChange }),

  /** Public; its `details` say whether the assistant is on. */
  readiness: async () => call<Readiness>('GET', '/health/ready', { anonymous: true }),
  queues: async () => (await call<{ queues: QueueCounters[] }>('GET', '/api/automation/queues')).queues,
  runStats: async (minutes: number) => call<RunStats>('GET', `/api/automation/runs/stats${query({ minutes })}`),

  nodeTypes: async () => (await call<{ nodeTypes: NodeTypeInfo[] }>('GET', '/api/automation/node-types')).nodeTypes,
  workflows: async (filter: WorkflowFilter = {}) => call<WorkflowSummary[]>('GET', `/api/automation/workflows${query({ ...filter })}`),
  workflow: async (id: string) => call<Workflow>('GET', `/api/automation/workflows/${encodeURIComponent(id)}`),
  createWorkflow: async (input: WorkflowInput) => call<Workflow>('POST', '/api/automation/workflows', { body: input }),
  updateWorkflow: async (id: string, changes: WorkflowChanges) => call<Workflow>('PATCH', `/api/automation/workflows/${encodeURIComponent(id)}`, { body: changes }),
  deleteWorkflow: async (id: string) => call<undefined>('DELETE', `/api/automation/workflows/${encodeURIComponent(id)}`),
  fire: async (id: string, triggerData: unknown) => call<RunAccepted>('POST', `/api/automation/workflows/${encodeURIComponent(id)}/fire`, { body: triggerData }),
  /** A test run of the saved workflow, active or not, with its pinned data unless `triggerData` is given; it ends after `untilNodeId`. */
  testWorkflow: async (id: string, input: TestRunInput) =>
    call<RunAccepted>('POST', `/api/automation/workflows/${encodeURIComponent(id)}/test`, { body: input }),
  /** Listens for the next request to the WEBHOOK workflow's inbound webhook, for 2 minutes: it becomes its pinned data. */
  listenForTestRequest: async (id: string) => call<TestCapture>('POST', `/api/automation/workflows/${encodeURIComponent(id)}/test-capture`),
  testCapture: async (id: string) => call<TestCapture>('GET', `/api/automation/workflows/${encodeURIComponent(id)}/test-capture`),
  versions: async (id: string) => call<WorkflowVersionSummary[]>('GET', `/api/automation/workflows/${encodeURIComponent(id)}/versions${query({ limit: 500 })}`),
  version: async (id: string, n: number) => call<WorkflowVersion>('GET', `/api/automation/workflows/${encodeURIComponent(id)}/versions/${n}`),
  restoreVersion: async (id: string, n: number) => call<Workflow>('POST', `/api/automation/workflows/${encodeURIComponent(id)}/versions/${n}/restore`),
  credentials: async () => call<Credential[]>('GET', `/api/automation/credentials${query({ limit: 500 })}`),
  createCredential: async (input: NewCredential) => call<Credential>('POST', '/api/automation/credentials', { body: input }),
  updateCredential: async (id: string, changes: CredentialChanges) => call<Credential>('PATCH', `/api/automation/credentials/${encodeURIComponent(id)}`, { body: changes }),
  deleteCredential: async (id: string) => call<undefined>('DELETE', `/api/automation/credentials/${encodeURIComponent(id)}`),

  runs: async (filter: RunFilter = {}) => call<RunSummary[]>('GET', `/api/automation/runs${query({ ...filter })}`),
  run: async (id: string) => call<Run>('GET', `/api/automation/runs/${encodeURIComponent(id)}`),
  cancelRun: async (id: string) => call<Run>('POST', `/api/automation/runs/${encodeURIComponent(id)}/cancel`),
  /** A new run of the finished run's workflow (as it is now), starting at `fromNodeId` with the outputs of the nodes before it. */
  retryRunFrom: async (id: string, fromNodeId: string) =>
    call<RunRetried>('POST', `/api/automation/runs/${encodeURIComponent(id)}/retry`, { body: { version: 'current', fromNodeId } satisfies RetryInput }),
  /** Decides the approval the run waits for at `nodeId`; 409 when it waits there no more (decided, timed out, ended). */
  resumeRun: async (id: string, nodeId: string, decision: ApprovalDecision) =>
    call<ApprovalDecided>('POST', `/api/automation/runs/${encodeURIComponent(id)}/resume`, { body: { nodeId, decision } satisfies ApprovalInput }),
  /** The approvals the viewer may decide (admins: everyone's), oldest first. */
  approvals: async (limit: number, offset = 0) => call<PendingApproval[]>('GET', `/api/automation/approvals${query({ limit, offset })}`),

  accounts: async () => call<ChatAccount[]>('GET', '/api/chat/accounts'),
  linkAccount: async (input: NewChatAccount) =>
    call<ChatAccount>('POST', '/api/chat/accounts', { body: input }),
  /** Re-checks the number against its stored token at the platform: the api verifies whenever phoneNumberId is sent. */
  verifyAccount: async (account: ChatAccount) =>
    call<ChatAccount>('PATCH', `/api/chat/accounts/${encodeURIComponent(account.id)}`, { body: { phoneNumberId: account.phoneNumberId } satisfies ChatAccountChanges }),
  /** A number with no platform behind it (README, Sandbox numbers). */
  createSandbox: async (name: string) => call<ChatAccount>('POST', '/api/chat/accounts', { body: { name, sandbox: true } satisfies NewChatAccount }),
  /** Plays a customer writing to the sandbox number `accountId`: processed as the platform's webhook's deliveries are. */
  playInbound: async (accountId: string, input: SandboxInbound) =>
    call<SandboxPlayed>('POST', `/api/chat/accounts/${encodeURIComponent(accountId)}/sandbox/inbound`, { body: input }),
  updateAccount: async (id: string, changes: ChatAccountChanges) => call<ChatAccount>('PATCH', `/api/chat/accounts/${encodeURIComponent(id)}`, { body: changes }),
  /** `id` may be `default`, the installation's account. */
  assistantSettings: async (id: string) => call<AssistantSettings>('GET', `/api/chat/accounts/${encodeURIComponent(id)}/assistant`),
  deleteAccount: async (id: string) => call<undefined>('DELETE', `/api/chat/accounts/${encodeURIComponent(id)}`),
  saveAssistantSettings: async (id: string, input: AssistantSettingsInput) => call<AssistantSettings>('PUT', `/api/chat/accounts/${encodeURIComponent(id)}/assistant`, { body: input }),
  /** An account's knowledge sources, newest first (README, Knowledge); `id` may be `default`. */
  knowledgeSources: async (id: string) => (await call<{ sources: KnowledgeSource[] }>('GET', `/api/chat/accounts/${encodeURIComponent(id)}/knowledge`)).sources,
  /** A source with its first 200 passages. */
  knowledgeSource: async (id: string, sourceId: string) =>
    call<KnowledgeSourceWithPassages>('GET', `/api/chat/accounts/${encodeURIComponent(id)}/knowledge/${encodeURIComponent(sourceId)}`),
  /** A text, Markdown, URL or FAQ source: answered at once, `indexing`, while the worker indexes it. */
  addKnowledgeSource: async (id: string, input: KnowledgeSourceInput) =>
    call<KnowledgeSource>('POST', `/api/chat/accounts/${encodeURIComponent(id)}/knowledge`, { body: input }),
  /** A PDF, sent as its bytes (Content-Type: application/pdf), its title and language in the query. */
  addPdfSource: async (id: string, file: Blob, input: PdfSource) =>
    call<KnowledgeSource>('POST', `/api/chat/accounts/${encodeURIComponent(id)}/knowledge${query({ ...input })}`, { pdf: file }, PDF_TIMEOUT_MS),
  deleteKnowledgeSource: async (id: string, sourceId: string) =>
    call<undefined>('DELETE', `/api/chat/accounts/${encodeURIComponent(id)}/knowledge/${encodeURIComponent(sourceId)}`),
  /** Indexes the source again from the text kept when it was first read; its passages answer until the new ones replace them. */
  reindexKnowledgeSource: async (id: string, sourceId: string) =>
    call<KnowledgeSource>('POST', `/api/chat/accounts/${encodeURIComponent(id)}/knowledge/${encodeURIComponent(sourceId)}/reindex`),
  /** The passages a turn would be given for `query`. */
  searchKnowledge: async (id: string, input: KnowledgeSearchInput) =>
    call<KnowledgeSearch>('POST', `/api/chat/accounts/${encodeURIComponent(id)}/knowledge/search`, { body: input }),
  consentSettings: async (id: string) => call<ConsentSettings>('GET', `/api/chat/accounts/${encodeURIComponent(id)}/consent`),
  saveConsentSettings: async (id: string, input: ConsentSettingsInput) => call<ConsentSettings>('PUT', `/api/chat/accounts/${encodeURIComponent(id)}/consent`, { body: input }),

  labels: async (accountId: string) => call<LabelCount[]>('GET', `/api/chat/labels${query({ limit: 500 })}`, { accountId }),
  addConversationLabel: async (accountId: string, conversationId: string, label: string) =>
    call<Conversation>('POST', `/api/chat/conversations/${encodeURIComponent(conversationId)}/labels`, { accountId, body: { label } }),
  removeConversationLabel: async (accountId: string, conversationId: string, label: string) =>
    call<Conversation>('DELETE', `/api/chat/conversations/${encodeURIComponent(conversationId)}/labels/${encodeURIComponent(label)}`, { accountId }),
  addContactLabel: async (accountId: string, contactId: string, label: string) =>
    call<Contact>('POST', `/api/chat/contacts/${encodeURIComponent(contactId)}/labels`, { accountId, body: { label } }),
  removeContactLabel: async (accountId: string, contactId: string, label: string) =>
    call<Contact>('DELETE', `/api/chat/contacts/${encodeURIComponent(contactId)}/labels/${encodeURIComponent(label)}`, { accountId }),
  contacts: async (accountId: string, filter: ContactFilter) => call<Contact[]>('GET', `/api/chat/contacts${query({ ...filter })}`, { accountId }),
  updateContact: async (accountId: string, id: string, changes: ContactChanges) => call<Contact>('PATCH', `/api/chat/contacts/${encodeURIComponent(id)}`, { accountId, body: changes }),
  importContacts: async (accountId: string, file: Blob) => call<ContactsImported>('POST', '/api/chat/contacts/import', { accountId, csv: file }, IMPORT_TIMEOUT_MS),

  conversations: async (accountId: string | undefined, filter: ConversationFilter, limit = 200) =>
    call<Conversation[]>('GET', `/api/chat/conversations${query({ ...filter, limit })}`, { accountId }),
  messages: async (accountId: string | undefined, conversationId: string, before?: string) =>
    call<ChatMessage[]>('GET', `/api/chat/conversations/${encodeURIComponent(conversationId)}/messages${query({ before, limit: 50 })}`, { accountId }),
  /** The bytes of a message's media, through the api from the chat platform. */
  media: async (accountId: string | undefined, messageId: string) => bytes(`/api/chat/messages/${encodeURIComponent(messageId)}/media`, { accountId }),
  markRead: async (accountId: string | undefined, conversationId: string) =>
    call<ConversationChanged>('POST', `/api/chat/conversations/${encodeURIComponent(conversationId)}/read`, { accountId }),
  /** Setting aiMode (even to the mode it has) resumes an assistant a staff reply paused. */
  /** Assigning someone (`assignedAgentId`) pauses the assistant like a staff reply; null unassigns. */
  updateConversation: async (accountId: string | undefined, conversationId: string, changes: ConversationChanges) =>
    call<ConversationChanged>('PATCH', `/api/chat/conversations/${encodeURIComponent(conversationId)}`, { accountId, body: changes }),
  /** The conversation's private notes, oldest first. */
  notes: async (accountId: string | undefined, conversationId: string) =>
    call<ConversationNote[]>('GET', `/api/chat/conversations/${encodeURIComponent(conversationId)}/notes${query({ limit: 500 })}`, { accountId }),
  /** A private note: never sent to the customer; `@email` mentions someone who can use the account. */
  addNote: async (accountId: string | undefined, conversationId: string, text: string) =>
    call<ConversationNote>('POST', `/api/chat/conversations/${encodeURIComponent(conversationId)}/notes`, { accountId, body: { text } satisfies NoteInput }),
  /** Who the account's conversations may be assigned to. */
  agents: async (accountId: string | undefined) => call<Agent[]>('GET', `/api/chat/agents${query({ limit: 500 })}`, { accountId }),
  chatEvents,
  cannedReplies: async (accountId: string | undefined) => call<CannedReply[]>('GET', `/api/chat/canned-replies${query({ limit: 500 })}`, { accountId }),
  /** 409 when the shortcut is taken. */
  saveCannedReply: async (accountId: string | undefined, input: CannedReplyInput, id?: string) => id === undefined
    ? call<CannedReply>('POST', '/api/chat/canned-replies', { accountId, body: input })
    : call<CannedReply>('PATCH', `/api/chat/canned-replies/${encodeURIComponent(id)}`, { accountId, body: input }),
  deleteCannedReply: async (accountId: string | undefined, id: string) => call<undefined>('DELETE', `/api/chat/canned-replies/${encodeURIComponent(id)}`, { accountId }),
  /** Sends the assistant's draft, as edited when `text` is given; 409 when it is no longer pending (decided, stale). */
  approveDraft: async (accountId: string | undefined, conversationId: string, messageId: string, text?: string) =>
    call<ChatMessage>('POST', `/api/chat/conversations/${encodeURIComponent(conversationId)}/drafts/${encodeURIComponent(messageId)}/approve`, { accountId, body: (text === undefined ? {} : { text }) satisfies DraftApproval }),
  rejectDraft: async (accountId: string | undefined, conversationId: string, messageId: string) =>
    call<ChatMessage>('POST', `/api/chat/conversations/${encodeURIComponent(conversationId)}/drafts/${encodeURIComponent(messageId)}/reject`, { accountId }),
  /** The assistant's recent turns for the conversation, newest first. */
  turns: async (accountId: string | undefined, conversationId: string, limit: number) =>
    call<AssistantTurn[]>('GET', `/api/chat/conversations/${encodeURIComponent(conversationId)}/turns${query({ limit })}`, { accountId }),
  /** `replyToId`: the message quoted (README, Message kinds: quoted replies). */
  sendText: async (accountId: string | undefined, to: string, text: string, agentName: string, replyToId?: string) =>
    call<unknown>('POST', '/api/chat/send/text', { accountId, body: { to, text, agentName, ...(replyToId !== undefined && { replyToId }) } satisfies TextMessage }),
  /** The business's reaction, kept on the message; "" removes it. */
  react: async (accountId: string | undefined, messageId: string, emoji: string) =>
    call<unknown>('POST', `/api/chat/messages/${encodeURIComponent(messageId)}/reaction`, { accountId, body: { emoji } satisfies ReactionInput }),
  sendTemplate: async (accountId: string | undefined, input: { to: string, templateName: string, lang: string, parameters: string[], body: string, agentName: string }) =>
    call<unknown>('POST', '/api/chat/send/template', {
      accountId,
      body: {
        to: input.to,
        templateName: input.templateName,
        lang: input.lang,
        agentName: input.agentName,
        templateContent: { body: input.body },
        ...(input.parameters.length > 0 && { components: [bodyComponent(input.parameters)] })
      } satisfies TemplateMessage
    }),
  templates: async (accountId: string | undefined) => call<Template[]>('GET', '/api/chat/templates', { accountId }),
  storedTemplates: async (accountId: string) => call<StoredTemplate[]>('GET', `/api/chat/templates${query({ status: 'all', limit: 500 })}`, { accountId }),
  createTemplate: async (accountId: string, input: NewTemplate) => call<StoredTemplate>('POST', '/api/chat/templates', { accountId, body: input }),
  deleteTemplate: async (accountId: string, name: string) => call<undefined>('DELETE', `/api/chat/templates/${encodeURIComponent(name)}`, { accountId }),

  /** The viewer's broadcasts (admins: everyone's), newest first, with their counts by recipient status. */
  broadcasts: async (limit: number, offset = 0) => call<Broadcast[]>('GET', `/api/chat/broadcasts${query({ limit, offset })}`),
  broadcast: async (id: string) => call<Broadcast>('GET', `/api/chat/broadcasts/${encodeURIComponent(id)}`),
  broadcastRecipients: async (id: string, filter: { status?: string, limit: number, offset: number }) =>
    call<BroadcastRecipient[]>('GET', `/api/chat/broadcasts/${encodeURIComponent(id)}/recipients${query({ ...filter })}`),
  /** Sent from `accountId`'s number; 201 with the broadcast, queued for its sendAt. */
  createBroadcast: async (accountId: string, input: BroadcastInput) => call<Broadcast>('POST', '/api/chat/broadcasts', { accountId, body: input }),
  /** 409 when the broadcast's status does not allow it (`Broadcast is done: it cannot be paused`). */
  changeBroadcast: async (id: string, action: 'pause' | 'resume' | 'cancel') => call<Broadcast>('POST', `/api/chat/broadcasts/${encodeURIComponent(id)}/${action}`),

  auditLog: async (filter: AuditFilter) => call<AuditEntry[]>('GET', `/api/audit${query({ ...filter })}`),
  users: async () => call<User[]>('GET', '/api/users'),
  createUser: async (input: NewUser) => call<User>('POST', '/api/users', { body: input }),
  updateUser: async (id: string, changes: UserChanges) => call<User>('PATCH', `/api/users/${encodeURIComponent(id)}`, { body: changes }),
  deleteUser: async (id: string) => call<undefined>('DELETE', `/api/users/${encodeURIComponent(id)}`),
  apiKeys: async () => call<ApiKey[]>('GET', '/api/auth/api-keys'),
  createApiKey: async (input: NewApiKey) =>
    call<CreatedKey>('POST', '/api/auth/api-keys', { body: input }),
  revokeApiKey: async (id: string) => call<undefined>('DELETE', `/api/auth/api-keys/${encodeURIComponent(id)}`)
}
