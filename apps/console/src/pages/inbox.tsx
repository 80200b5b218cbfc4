import { useEffect, useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { api, ApiError, type ConversationFilter } from '../api.ts'
import { ErrorNotice, FailureReason, Loading, PageTitle, StatusTicks } from '../components/ui.tsx'
import { ago, clock, dateTime } from '../format.ts'
import { CannedReplies, ReplyText } from '../components/canned-replies.tsx'
import { useAction, useData } from '../hooks.ts'
import { useInboxEvents } from '../live.ts'
import { paths } from '../paths.ts'
import { chooseAccount, chosenAccount, DEFAULT_ACCOUNT, loadSession } from '../session.ts'
import { AI_MODES, type Agent, type AiMode, type AssistantTurn, type CannedReply, type ChatAccount, type ChatMessage, type Conversation, type MessageStatus, type Template } from '../types.ts'

const REFRESH_MS = 5000
/** While the inbox's event stream is open, polling only backs it up. */
const LIVE_REFRESH_MS = 60_000
/** Free text is allowed within 24 hours of the customer's latest message (README, Chat). */
const WINDOW_MS = 24 * 3600 * 1000

interface AccountChoice { id: string, label: string }

/**
 * The accounts a user can read and send with: their linked accounts or, without any, the
 * installation's default account; an admin may pick any account and the default one too.
 */
function choicesOf (accounts: ChatAccount[]): AccountChoice[] {
  const session = loadSession()
  const admin = session?.user.role === 'admin'
  const own = accounts.filter((account) => account.userId === session?.user.id)
  const linked = (admin ? accounts : own).map((account) => ({ id: account.id, label: `${account.name}${account.displayPhoneNumber === null ? '' : ` (${account.displayPhoneNumber})`}` }))
  return own.length === 0 || admin ? [{ id: DEFAULT_ACCOUNT, label: 'Default account (installation)' }, ...linked] : linked
}

const inWindow = (conversation: Conversation): boolean =>
  conversation.lastIncomingAt !== null && Date.now() - Date.parse(conversation.lastIncomingAt) < WINDOW_MS

/** The body text of a template and its positional placeholders ({{1}}, {{2}}…). */
function bodyOf (template: Template): { text: string, count: number } {
  const text = template.components?.find((component) => component.type.toUpperCase() === 'BODY')?.text ?? ''
  return { text, count: new Set(text.match(/\{\{\d+\}\}/g) ?? []).size }
}

function TemplateReply ({ accountId, conversation, onSent }: { accountId: string, conversation: Conversation, onSent: () => void }) {
  const templates = useData(async () => (await api.templates(accountId)).filter((template) => template.status === 'APPROVED'), [accountId])
  const [chosen, setChosen] = useState('')
  const [values, setValues] = useState<string[]>([])
  const template = templates.data?.find((candidate) => `${candidate.name}|${candidate.language}` === chosen)
  const body = template === undefined ? { text: '', count: 0 } : bodyOf(template)
  const preview = body.text.replace(/\{\{(\d+)\}\}/g, (placeholder, n: string) => values[Number(n) - 1] || placeholder)
  const send = useAction(async () => {
    if (template === undefined) throw new Error('Pick a template first')
    const parameters = Array.from({ length: body.count }, (_, i) => values[i] ?? '')
    await api.sendTemplate(accountId, { to: conversation.phone, templateName: template.name, lang: template.language, parameters, body: preview, agentName: loadSession()?.user.email ?? 'console' })
    setValues([])
    onSent()
  })
  return (
    <form class='reply' onSubmit={(event) => { event.preventDefault(); send.run() }}>
      <p class='notice'>The customer last wrote more than 24 hours ago{conversation.lastIncomingAt === null ? ' (or never)' : ''}: only an approved template can be sent.</p>
      <ErrorNotice error={templates.error ?? send.error} />
      <label for='template'>Template</label>
      <select id='template' value={chosen} onChange={(e) => { setChosen(e.currentTarget.value); setValues([]) }} disabled={templates.data === undefined}>
        <option value=''>{templates.data === undefined ? 'Loading templates…' : 'Choose a template'}</option>
        {(templates.data ?? []).map((candidate) => (
          <option key={`${candidate.name}|${candidate.language}`} value={`${candidate.name}|${candidate.language}`}>{candidate.name} · {candidate.language}</option>
        ))}
      </select>
      {Array.from({ length: body.count }, (_, i) => (
        <div key={i}>
          <label for={`template-param-${i + 1}`}>{`Value of {{${i + 1}}}`}</label>
          <input id={`template-param-${i + 1}`} required value={values[i] ?? ''} onInput={(e) => { const next = [...values]; next[i] = e.currentTarget.value; setValues(next) }} />
        </div>
      ))}
      {template !== undefined && <p class='template-preview'><span class='muted'>Preview: </span>{preview}</p>}
      <button type='submit' class='primary' disabled={send.busy || template === undefined}>{send.busy ? 'Sending…' : 'Send template'}</button>
    </form>
  )
}

function TextReply ({ accountId, conversation, replies, onSent }: { accountId: string, conversation: Conversation, replies: CannedReply[], onSent: () => void }) {
  const [text, setText] = useState('')
  const send = useAction(async () => {
    await api.sendText(accountId, conversation.phone, text.trim(), loadSession()?.user.email ?? 'console')
    setText('')
    onSent()
  })
  const until = conversation.lastIncomingAt === null ? '' : dateTime(new Date(Date.parse(conversation.lastIncomingAt) + WINDOW_MS).toISOString())
  return (
    <form class='reply' onSubmit={(event) => { event.preventDefault(); send.run() }}>
      <label for='reply-text'>Reply <span class='muted'>(free text allowed until {until}, 24 hours after the customer’s last message)</span></label>
      <ReplyText id='reply-text' value={text} onInput={setText} onSend={() => { send.run() }} replies={replies} />
      <ErrorNotice error={send.error} />
      <button type='submit' class='primary' disabled={send.busy || text.trim() === ''}>{send.busy ? 'Sending…' : 'Send'}</button>
      <span class='muted small'> Ctrl+Enter sends; <kbd>/</kbd> inserts a canned reply.</span>
    </form>
  )
}

/** What a draft the assistant wrote says beside it, by its status: staff decide the pending ones. */
const DRAFT_LABELS: Record<string, string> = {
  pending_approval: 'Draft by the assistant, waiting for approval: not sent yet',
  rejected: 'Rejected draft: never sent',
  stale: 'Stale draft: the customer wrote again before it was decided; never sent'
}
const isDraft = (message: ChatMessage): boolean => message.status !== null && Object.hasOwn(DRAFT_LABELS, message.status)

/**
 * A draft of the assistant in the thread: Approve sends it as written, Edit sends it as changed,
 * Reject never sends it. Drafts decided or left stale stay in the thread, muted, with their status.
 */
function Draft ({ accountId, conversationId, message, onDecided }: { accountId: string, conversationId: string, message: ChatMessage, onDecided: () => void }) {
  const [edited, setEdited] = useState<string | null>(null)
  const pending = message.status === 'pending_approval'
  const decide = useAction(async (decision: 'approve' | 'reject', text?: string) => {
    try {
      if (decision === 'approve') await api.approveDraft(accountId, conversationId, message.id, text)
      else await api.rejectDraft(accountId, conversationId, message.id)
      setEdited(null)
    } finally {
      // Decided here or not (409: decided elsewhere or stale), the thread shows where the draft is now.
      onDecided()
    }
  })
  const textId = `draft-text-${message.id}`
  return (
    <li class={`message outbound draft${pending ? '' : ' draft-closed'}`} data-direction='outbound' data-draft={message.status}>
      <span class='draft-label small'>{DRAFT_LABELS[message.status ?? '']}</span>
      {edited === null || !pending
        ? <div class='bubble'>{message.content}</div>
        : (
          <form class='draft-edit' onSubmit={(event) => { event.preventDefault(); decide.run('approve', edited.trim()) }}>
            <label for={textId}>Edit the draft</label>
            <textarea id={textId} rows={3} maxLength={4096} required value={edited} onInput={(e) => { setEdited(e.currentTarget.value) }} />
            <div class='row'>
              <button type='submit' class='primary' disabled={decide.busy || edited.trim() === ''}>{decide.busy ? 'Sending…' : 'Send edited'}</button>
              <button type='button' disabled={decide.busy} onClick={() => { setEdited(null) }}>Cancel</button>
            </div>
          </form>
          )}
      <div class='meta'>
        <time dateTime={message.createdAt} title={dateTime(message.createdAt)}>{clock(message.createdAt)}</time>
      </div>
      <ErrorNotice error={decide.error} />
      {pending && edited === null && (
        <div class='row draft-actions'>
          <button type='button' class='primary' disabled={decide.busy} title='Sends the draft as written' onClick={() => { decide.run('approve') }}>Approve</button>
          <button type='button' disabled={decide.busy} onClick={() => { setEdited(message.content) }}>Edit</button>
          <button type='button' class='danger' disabled={decide.busy} title='The draft is never sent' onClick={() => { decide.run('reject') }}>Reject</button>
        </div>
      )}
    </li>
  )
}

/** Media the inbox shows inline; anything else is offered for download. */
const INLINE_MEDIA = new Set(['image', 'sticker'])

/**
 * A media message: an image shown inline, any other media offered for download, with its caption.
 * The bytes come through the api with the token, so they are fetched and shown by an object URL,
 * released when the message leaves the screen.
 */
function Media ({ accountId, message }: { accountId: string, message: ChatMessage }) {
  const inline = INLINE_MEDIA.has(message.type)
  const [url, setUrl] = useState<string>()
  const [failure, setFailure] = useState<Error>()
  useEffect(() => {
    if (!inline) return
    let objectUrl: string | undefined
    let gone = false
    api.media(accountId, message.id).then((blob) => {
      if (gone) return
      objectUrl = URL.createObjectURL(blob)
      setUrl(objectUrl)
    }, (err: Error) => { if (!gone) setFailure(err) })
    return () => {
      gone = true
      if (objectUrl !== undefined) URL.revokeObjectURL(objectUrl)
    }
  }, [accountId, message.id, inline])
  const download = useAction(async () => {
    const objectUrl = URL.createObjectURL(await api.media(accountId, message.id))
    const link = document.createElement('a')
    link.href = objectUrl
    link.download = message.media?.filename ?? `${message.type}-${message.id}`
    link.click()
    // The browser reads the URL after this turn of the event loop: released a moment later.
    setTimeout(() => { URL.revokeObjectURL(objectUrl) }, 1000)
  })
  const caption = message.media?.caption
  return (
    <>
      {inline
        ? url === undefined
          ? <span class='media-placeholder muted small'>{failure === undefined ? `Loading the ${message.type}…` : `The ${message.type} cannot be shown: ${failure.message}`}</span>
          : <img class='media-image' src={url} alt={caption ?? `The customer’s ${message.type}`} />
        : (
          <button type='button' class='link-button' disabled={download.busy} onClick={() => { download.run() }}>
            Download {message.media?.filename ?? `the ${message.type}`}
          </button>
          )}
      <ErrorNotice error={download.error} />
      {caption !== undefined && <span class='media-caption'>{caption}</span>}
    </>
  )
}

function Messages ({ accountId, conversationId, messages, onDecided }: { accountId: string, conversationId: string, messages: ChatMessage[], onDecided: () => void }) {
  return (
    <ol class='messages' aria-label='Messages, oldest first'>
      {messages.map((message) => isDraft(message)
        ? <Draft key={message.id} accountId={accountId} conversationId={conversationId} message={message} onDecided={onDecided} />
        : (
          <li key={message.id} class={`message ${message.direction}`} data-direction={message.direction}>
            <span class='visually-hidden'>{message.direction === 'inbound' ? 'Customer: ' : `Sent${message.agentName === null ? '' : ` by ${message.agentName}`}: `}</span>
            <div class='bubble'>{message.media?.id === undefined ? message.content : <Media accountId={accountId} message={message} />}</div>
            <div class='meta'>
              <time dateTime={message.createdAt} title={dateTime(message.createdAt)}>{clock(message.createdAt)}</time>
              {message.direction === 'outbound' && <StatusTicks status={message.status as MessageStatus | null} />}
            </div>
            {message.status === 'failed' && message.error !== null && <FailureReason error={message.error} />}
          </li>
          ))}
    </ol>
  )
}

const MODE_HELP: Record<AiMode, string> = {
  OFF: 'Off: the assistant does not answer this conversation.',
  HYBRID: 'Hybrid: the assistant drafts replies; staff approve, edit or reject them.',
  AUTO: 'Auto: the assistant sends its replies at once.'
}

/**
 * The conversation's aiMode; choosing one, even the current one, resumes an assistant a staff reply
 * paused. `model`: the model the account's turns use, null when none is configured (the assistant is off).
 */
function AssistantMode ({ accountId, conversation, model, onChanged }: { accountId: string, conversation: Conversation, model: string | null | undefined, onChanged: () => void }) {
  const change = useAction(async (aiMode: AiMode) => {
    await api.updateConversation(accountId, conversation.id, { aiMode })
    onChanged()
  })
  return (
    <div class='assistant-mode'>
      <div class='row'>
        <strong id='ai-mode-label'>Assistant</strong>
        <div class='view-toggle' role='group' aria-labelledby='ai-mode-label'>
          {AI_MODES.map((mode) => (
            <button key={mode} type='button' aria-pressed={conversation.aiMode === mode} disabled={change.busy} title={MODE_HELP[mode]} onClick={() => { change.run(mode) }}>{mode}</button>
          ))}
        </div>
      </div>
      {model === null && <p class='notice' id='assistant-off'>The assistant is off: no model is configured (AI_MODEL, or a model in the account’s assistant settings). The mode applies once one is.</p>}
      {conversation.assistantPaused
        ? <p class='notice' id='assistant-paused'>Paused after a staff reply or an assignment — choose a mode to resume</p>
        : <p class='muted small'>{MODE_HELP[conversation.aiMode]}</p>}
      <ErrorNotice error={change.error} />
    </div>
  )
}

const TURNS_SHOWN = 10

function TurnItem ({ turn, names }: { turn: AssistantTurn, names: Map<string, string> | undefined }) {
  return (
    <li class={`turn turn-${turn.outcome ?? turn.status}`} data-turn={turn.id}>
      <div>
        <time dateTime={turn.createdAt} title={dateTime(turn.createdAt)}>{clock(turn.createdAt, true)}</time>
        {' · '}<strong class='turn-outcome'>{turn.outcome ?? turn.status}</strong>
        {turn.draftDecision !== null && <span> · draft {turn.draftDecision}</span>}
        <span class='muted small'> · {turn.model ?? 'no model'} · {turn.tokensIn} tokens in, {turn.tokensOut} out{turn.attempts > 1 && ` · ${turn.attempts} attempts`}</span>
      </div>
      {turn.error !== null && <div class='error-text'>{turn.error}</div>}
      {turn.toolCalls.length > 0 && (
        <ul class='tool-calls' aria-label='Tool calls'>
          {turn.toolCalls.map((call) => (
            <li key={call.id} data-tool-call={call.name}>
              <code>{call.name}</code> {call.status}
              {call.workflowId !== null && <> · workflow <a href={paths.workflow(call.workflowId)}>{names?.get(call.workflowId) ?? call.workflowId}</a></>}
              {call.runId !== null && <> · <a href={paths.run(call.runId)} class='tool-run'>its run</a></>}
              {call.error !== undefined && <span class='error-text'> · {call.error}</span>}
            </li>
          ))}
        </ul>
      )}
      {turn.log.length > 0 && (
        <details class='turn-log'>
          <summary class='small'>Log ({turn.log.length})</summary>
          <ol class='logs'>
            {turn.log.map((entry, n) => (
              <li key={n} class='log'><time dateTime={entry.at}>{clock(entry.at, true)}</time> {entry.event}{entry.detail !== undefined && ` ${JSON.stringify(entry.detail)}`}</li>
            ))}
          </ol>
        </details>
      )}
    </li>
  )
}

/** What the assistant did for this conversation, read while open: each turn's outcome, the workflows it ran as tools, its tokens. */
function AssistantActivity ({ accountId, conversationId }: { accountId: string, conversationId: string }) {
  const [open, setOpen] = useState(false)
  const turns = useData(async () => open ? api.turns(accountId, conversationId, TURNS_SHOWN) : undefined, [accountId, conversationId, open], open ? REFRESH_MS : null)
  const tools = turns.data?.some((turn) => turn.toolCalls.some((call) => call.workflowId !== null)) === true
  const names = useData(async () => tools ? new Map((await api.workflows({ limit: 500 })).map((workflow) => [workflow.id, workflow.name])) : undefined, [tools])
  return (
    <details class='assistant-activity' onToggle={(e) => { setOpen(e.currentTarget.open) }}>
      <summary>Assistant activity</summary>
      <p class='muted small'>The assistant’s latest {TURNS_SHOWN} turns, newest first: one per customer message it took up.</p>
      <ErrorNotice error={turns.error} />
      {turns.data === undefined
        ? open && <Loading what='the assistant’s turns' />
        : turns.data.length === 0
          ? <p class='muted'>The assistant has not taken up a message of this conversation.</p>
          : <ol class='turns'>{turns.data.map((turn) => <TurnItem key={turn.id} turn={turn} names={names.data} />)}</ol>}
    </details>
  )
}

/** A person's name in the inbox: their email, or `you`. */
const nameOf = (agents: Agent[] | undefined, userId: string): string =>
  userId === loadSession()?.user.id ? 'you' : agents?.find((agent) => agent.id === userId)?.email ?? 'someone who cannot use this account any more'

/** Who the conversation is assigned to, changed here: assigning someone pauses the assistant, like a staff reply. */
function Assignment ({ accountId, conversation, agents, onChanged }: { accountId: string, conversation: Conversation, agents: Agent[] | undefined, onChanged: () => void }) {
  const change = useAction(async (assignedAgentId: string | null) => {
    await api.updateConversation(accountId, conversation.id, { assignedAgentId })
    onChanged()
  })
  const assigned = conversation.assignedAgentId
  const me = loadSession()?.user.id
  return (
    <div class='assignment'>
      <label for='assigned-to'>Assigned to</label>
      <select id='assigned-to' value={assigned ?? ''} disabled={change.busy || agents === undefined} onChange={(e) => { change.run(e.currentTarget.value === '' ? null : e.currentTarget.value) }}>
        <option value=''>Nobody</option>
        {assigned !== null && agents?.some((agent) => agent.id === assigned) === false && <option value={assigned}>{nameOf(agents, assigned)}</option>}
        {agents?.map((agent) => <option key={agent.id} value={agent.id}>{agent.id === me ? `${agent.email} (you)` : agent.email}</option>)}
      </select>
      {assigned !== me && me !== undefined && agents?.some((agent) => agent.id === me) === true && (
        <button type='button' class='link-button' disabled={change.busy} onClick={() => { change.run(me) }}>Assign to me</button>
      )}
      <ErrorNotice error={change.error} />
    </div>
  )
}

interface ConversationViewProps {
  accountId: string
  conversation: Conversation
  model: string | null | undefined
  agents: Agent[] | undefined
  replies: CannedReply[]
  /** Rises when the inbox's stream says something changed: the thread reloads. */
  version: number
  refreshMs: number
  onChanged: () => void
}

function ConversationView ({ accountId, conversation, model, agents, replies, version, refreshMs, onChanged }: ConversationViewProps) {
  const [older, setOlder] = useState<ChatMessage[]>([])
  const [exhausted, setExhausted] = useState(false)
  const latest = useData(async () => api.messages(accountId, conversation.id), [accountId, conversation.id, version], refreshMs)
  useEffect(() => { setOlder([]); setExhausted(false) }, [conversation.id])
  useEffect(() => {
    if (conversation.unreadCount > 0) api.markRead(accountId, conversation.id).then(onChanged, () => {})
  }, [conversation.id, conversation.unreadCount])
  const loadOlder = useAction(async () => {
    const first = older[0] ?? latest.data?.[0]
    if (first === undefined) return
    const page = await api.messages(accountId, conversation.id, first.id)
    if (page.length === 0) setExhausted(true)
    setOlder([...page, ...older])
  })
  const archive = useAction(async () => {
    await api.updateConversation(accountId, conversation.id, { isArchived: !conversation.isArchived })
    onChanged()
  })
  const seen = new Set(older.map((message) => message.id))
  const messages = [...older, ...(latest.data ?? []).filter((message) => !seen.has(message.id))]
  const sent = (): void => { latest.reload(); onChanged() }
  return (
    <section class='conversation' aria-labelledby='conversation-title'>
      <header class='conversation-head'>
        <div>
          <h2 id='conversation-title'>{conversation.name ?? conversation.phone}</h2>
          <span class='muted mono'>+{conversation.phone}</span>
          {conversation.optedOut && <span class='badge status-failed' id='opted-out' title='The customer opted out of messages: only a reply after they write again can be sent'>Opted out</span>}
        </div>
        <Assignment accountId={accountId} conversation={conversation} agents={agents} onChanged={onChanged} />
        <button type='button' disabled={archive.busy} onClick={() => { archive.run() }}>{conversation.isArchived ? 'Unarchive' : 'Archive'}</button>
      </header>
      <AssistantMode accountId={accountId} conversation={conversation} model={model} onChanged={onChanged} />
      <ErrorNotice error={latest.error ?? loadOlder.error ?? archive.error} />
      {latest.data !== undefined && latest.data.length >= 50 && !exhausted && (
        <button type='button' class='link-button' disabled={loadOlder.busy} onClick={() => { loadOlder.run() }}>Load older messages</button>
      )}
      {latest.data === undefined ? <Loading what='messages' /> : <Messages accountId={accountId} conversationId={conversation.id} messages={messages} onDecided={sent} />}
      {inWindow(conversation)
        ? <TextReply accountId={accountId} conversation={conversation} replies={replies} onSent={sent} />
        : <TemplateReply accountId={accountId} conversation={conversation} onSent={sent} />}
      <AssistantActivity accountId={accountId} conversationId={conversation.id} />
    </section>
  )
}

/**
 * The installation's default account was asked for and there is none (CHAT_PHONE_NUMBER_ID and
 * CHAT_ACCESS_TOKEN unset): nothing is broken, nothing is set up yet.
 */
const noAccountSetUp = (accountId: string | undefined, error: Error | undefined): boolean =>
  accountId === DEFAULT_ACCOUNT && error instanceof ApiError && error.code === 'CHAT_ACCOUNT_NOT_FOUND'

function NoChatAccount ({ others }: { others: boolean }) {
  return (
    <div class='card empty-state' id='no-chat-account'>
      <h2>No chat account is set up</h2>
      <p>
        The inbox shows the conversations of a chat platform number once one is connected.
        {others ? ' This installation has no default account: choose a linked account above, or set one up:' : ' To set one up:'}
      </p>
      <ul>
        <li>link a number under <a href={paths.admin}>Admin → Chat accounts</a> with its phone number id and access token, or</li>
        <li>have the operator set <code>CHAT_PHONE_NUMBER_ID</code> and <code>CHAT_ACCESS_TOKEN</code> (and <code>CHAT_BUSINESS_ACCOUNT_ID</code> for templates): the installation’s default account, shared by everyone who links none.</li>
      </ul>
    </div>
  )
}

/**
 * The label filter, applied on Enter or when left: what is being typed is the field's own, so that
 * the list reloading meanwhile (live changes) does not put the applied label back.
 */
function LabelFilter ({ value, onChange }: { value: string, onChange: (label: string) => void }) {
  const [typed, setTyped] = useState(value)
  useEffect(() => { setTyped(value) }, [value])
  return (
    <label>Label
      <input type='search' value={typed} maxLength={50} placeholder='Any' onInput={(e) => { setTyped(e.currentTarget.value) }} onChange={(e) => { onChange(e.currentTarget.value.trim()) }} />
    </label>
  )
}

function AccountSwitcher ({ choices, value, onChange }: { choices: AccountChoice[], value: string, onChange: (id: string) => void }) {
  if (choices.length < 2) return null
  return (
    <label class='account-switcher'>Chat account
      <select value={value} onChange={(e) => { onChange(e.currentTarget.value) }}>
        {choices.map((choice) => <option key={choice.id} value={choice.id}>{choice.label}</option>)}
      </select>
    </label>
  )
}

export function Inbox () {
  const { query, route } = useLocation()
  const accounts = useData(api.accounts, [])
  const choices = accounts.data === undefined ? [] : choicesOf(accounts.data)
  const stored = chosenAccount()
  const accountId = choices.find((choice) => choice.id === (query.account ?? stored))?.id ?? choices[0]?.id
  const filter: ConversationFilter = { filter: query.filter, sort: query.sort, assigned: query.assigned, label: query.label }
  const live = useInboxEvents(accountId)
  const refreshMs = live.connected ? LIVE_REFRESH_MS : REFRESH_MS
  const conversations = useData(async () => accountId === undefined ? [] : api.conversations(accountId, filter),
    [accountId, query.filter, query.sort, query.assigned, query.label, live.version], refreshMs)
  const agents = useData(async () => accountId === undefined ? undefined : api.agents(accountId), [accountId])
  const replies = useData(async () => accountId === undefined ? undefined : api.cannedReplies(accountId), [accountId])
  const open = conversations.data?.find((conversation) => conversation.id === query.c)
  // Whether the account's assistant has a model: without one it is off, whatever each conversation's mode.
  const assistant = useData(async () => accountId === undefined ? undefined : api.assistantSettings(accountId), [accountId])
  // Remembered for the next visit, and for the overview's count of drafts waiting.
  useEffect(() => { if (accountId !== undefined) chooseAccount(accountId) }, [accountId])

  const go = (changes: Record<string, string>): void => {
    const next = new URLSearchParams({ ...query, ...changes })
    for (const [key, value] of [...next.entries()]) if (value === '') next.delete(key)
    route(`${paths.inbox}?${next.toString()}`, true)
  }

  const state = live.connected
    ? <span class='badge ok' id='inbox-live' title='Changes appear as they happen'>Live</span>
    : <span class='badge off' id='inbox-polling' title='The live stream is not connected: the inbox reloads every few seconds'>Reloading every {REFRESH_MS / 1000} s</span>
  const title = <PageTitle actions={<>{state}<AccountSwitcher choices={choices} value={accountId ?? ''} onChange={(id) => { go({ account: id, c: '' }) }} /></>}>Inbox</PageTitle>
  if (noAccountSetUp(accountId, conversations.error)) return <section>{title}<NoChatAccount others={choices.length > 1} /></section>

  return (
    <section>
      {title}
      <ErrorNotice error={accounts.error ?? conversations.error ?? agents.error ?? replies.error} />
      <div class={`inbox${open === undefined ? '' : ' has-open'}`}>
        <div class='conversation-list'>
          <form class='filters' aria-label='Filter conversations' onSubmit={(event) => { event.preventDefault() }}>
            <label>Show
              <select value={query.filter ?? ''} onChange={(e) => { go({ filter: e.currentTarget.value }) }}>
                <option value=''>Not archived</option>
                <option value='unread'>Unread</option>
                <option value='active'>Active (last 24 hours)</option>
                <option value='archived'>Archived</option>
              </select>
            </label>
            <label>Sort
              <select value={query.sort ?? ''} onChange={(e) => { go({ sort: e.currentTarget.value }) }}>
                <option value=''>Newest</option>
                <option value='unread'>Unread first</option>
                <option value='oldest'>Oldest</option>
              </select>
            </label>
            <label>Assigned
              <select value={query.assigned ?? ''} onChange={(e) => { go({ assigned: e.currentTarget.value }) }}>
                <option value=''>Anyone</option>
                <option value='me'>Assigned to me</option>
                <option value='none'>Unassigned</option>
              </select>
            </label>
            <LabelFilter value={query.label ?? ''} onChange={(label) => { go({ label }) }} />
          </form>
          {conversations.data === undefined
            ? <Loading what='conversations' />
            : conversations.data.length === 0
              ? <p class='muted'>No conversation here yet.</p>
              : (
                <ul class='conversations' aria-label='Conversations'>
                  {conversations.data.map((conversation) => (
                    <li key={conversation.id}>
                      <a
                        href={`${paths.inbox}?${new URLSearchParams({ ...query, c: conversation.id }).toString()}`}
                        aria-current={conversation.id === query.c ? 'true' : undefined}
                        data-conversation={conversation.phone}
                      >
                        <span class='contact'><strong>{conversation.name ?? `+${conversation.phone}`}</strong>{conversation.isPinned && <span class='muted'> · pinned</span>}</span>
                        <span class='badges'>
                          {conversation.pendingApprovalCount > 0 && <span class='drafts-badge' title='Drafts of the assistant waiting for approval'>{conversation.pendingApprovalCount} {conversation.pendingApprovalCount === 1 ? 'draft' : 'drafts'}</span>}
                          {conversation.unreadCount > 0 && <span class='unread' aria-label={`${conversation.unreadCount} unread`}>{conversation.unreadCount}</span>}
                        </span>
                        <span class='last muted'>{conversation.lastMessage ?? ''}</span>
                        {conversation.assignedAgentId !== null && <span class='assignee muted small'>Assigned to {nameOf(agents.data, conversation.assignedAgentId)}</span>}
                        <span class='when muted small'>{ago(conversation.lastMessageAt)}</span>
                      </a>
                    </li>
                  ))}
                </ul>
                )}
          {accountId !== undefined && <CannedReplies accountId={accountId} replies={replies.data} onChanged={() => { replies.reload() }} />}
        </div>
        <div class='conversation-pane'>
          {open !== undefined && accountId !== undefined
            ? (
              <>
                <a class='back-link' href={`${paths.inbox}?${new URLSearchParams({ ...query, c: '' }).toString()}`}>← All conversations</a>
                <ConversationView
                  key={open.id} accountId={accountId} conversation={open} model={assistant.data?.effectiveModel} agents={agents.data} replies={replies.data ?? []}
                  version={live.version} refreshMs={refreshMs} onChanged={() => { conversations.reload() }}
                />
              </>
              )
            : <p class='muted placeholder'>Choose a conversation to read it and answer.</p>}
        </div>
      </div>
    </section>
  )
}
