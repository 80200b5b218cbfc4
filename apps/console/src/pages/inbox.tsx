import { useEffect, useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { api, ApiError, type ConversationFilter } from '../api.ts'
import { ErrorNotice, Loading, PageTitle, StatusTicks } from '../components/ui.tsx'
import { ago, clock, dateTime } from '../format.ts'
import { useAction, useData } from '../hooks.ts'
import { paths } from '../paths.ts'
import { loadSession } from '../session.ts'
import type { ChatAccount, ChatMessage, Conversation, Template } from '../types.ts'

const REFRESH_MS = 5000
/** Free text is allowed within 24 hours of the customer's latest message (spec 4.4). */
const WINDOW_MS = 24 * 3600 * 1000
const ACCOUNT_KEY = 'switchboard.console.account'
/** The installation's account from the environment, as X-Account-Id names it. */
const DEFAULT_ACCOUNT = 'default'

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

function TextReply ({ accountId, conversation, onSent }: { accountId: string, conversation: Conversation, onSent: () => void }) {
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
      <textarea
        id='reply-text' rows={3} maxLength={4096} required value={text}
        onInput={(e) => { setText(e.currentTarget.value) }}
        onKeyDown={(e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && text.trim() !== '') send.run() }}
      />
      <ErrorNotice error={send.error} />
      <button type='submit' class='primary' disabled={send.busy || text.trim() === ''}>{send.busy ? 'Sending…' : 'Send'}</button>
      <span class='muted small'> Ctrl+Enter sends.</span>
    </form>
  )
}

function Messages ({ messages }: { messages: ChatMessage[] }) {
  return (
    <ol class='messages' aria-label='Messages, oldest first'>
      {messages.map((message) => (
        <li key={message.id} class={`message ${message.direction}`} data-direction={message.direction}>
          <span class='visually-hidden'>{message.direction === 'inbound' ? 'Customer: ' : `Sent${message.agentName === null ? '' : ` by ${message.agentName}`}: `}</span>
          <div class='bubble'>{message.content}</div>
          <div class='meta'>
            <time dateTime={message.createdAt} title={dateTime(message.createdAt)}>{clock(message.createdAt)}</time>
            {message.direction === 'outbound' && <StatusTicks status={message.status} />}
          </div>
        </li>
      ))}
    </ol>
  )
}

function ConversationView ({ accountId, conversation, onChanged }: { accountId: string, conversation: Conversation, onChanged: () => void }) {
  const [older, setOlder] = useState<ChatMessage[]>([])
  const [exhausted, setExhausted] = useState(false)
  const latest = useData(async () => api.messages(accountId, conversation.id), [accountId, conversation.id], REFRESH_MS)
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
        </div>
        <button type='button' disabled={archive.busy} onClick={() => { archive.run() }}>{conversation.isArchived ? 'Unarchive' : 'Archive'}</button>
      </header>
      <ErrorNotice error={latest.error ?? loadOlder.error ?? archive.error} />
      {latest.data !== undefined && latest.data.length >= 50 && !exhausted && (
        <button type='button' class='link-button' disabled={loadOlder.busy} onClick={() => { loadOlder.run() }}>Load older messages</button>
      )}
      {latest.data === undefined ? <Loading what='messages' /> : <Messages messages={messages} />}
      {inWindow(conversation)
        ? <TextReply accountId={accountId} conversation={conversation} onSent={sent} />
        : <TemplateReply accountId={accountId} conversation={conversation} onSent={sent} />}
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
  const stored = localStorage.getItem(ACCOUNT_KEY)
  const accountId = choices.find((choice) => choice.id === (query.account ?? stored))?.id ?? choices[0]?.id
  const filter: ConversationFilter = { filter: query.filter, sort: query.sort }
  const conversations = useData(async () => accountId === undefined ? [] : api.conversations(accountId, filter), [accountId, query.filter, query.sort], REFRESH_MS)
  const open = conversations.data?.find((conversation) => conversation.id === query.c)

  const go = (changes: Record<string, string>): void => {
    const next = new URLSearchParams({ ...query, ...changes })
    for (const [key, value] of [...next.entries()]) if (value === '') next.delete(key)
    route(`${paths.inbox}?${next.toString()}`, true)
  }

  const title = <PageTitle actions={<AccountSwitcher choices={choices} value={accountId ?? ''} onChange={(id) => { localStorage.setItem(ACCOUNT_KEY, id); go({ account: id, c: '' }) }} />}>Inbox</PageTitle>
  if (noAccountSetUp(accountId, conversations.error)) return <section>{title}<NoChatAccount others={choices.length > 1} /></section>

  return (
    <section>
      {title}
      <ErrorNotice error={accounts.error ?? conversations.error} />
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
                        {conversation.unreadCount > 0 && <span class='unread' aria-label={`${conversation.unreadCount} unread`}>{conversation.unreadCount}</span>}
                        <span class='last muted'>{conversation.lastMessage ?? ''}</span>
                        <span class='when muted small'>{ago(conversation.lastMessageAt)}</span>
                      </a>
                    </li>
                  ))}
                </ul>
                )}
        </div>
        <div class='conversation-pane'>
          {open !== undefined && accountId !== undefined
            ? (
              <>
                <a class='back-link' href={`${paths.inbox}?${new URLSearchParams({ ...query, c: '' }).toString()}`}>← All conversations</a>
                <ConversationView key={open.id} accountId={accountId} conversation={open} onChanged={() => { conversations.reload() }} />
              </>
              )
            : <p class='muted placeholder'>Choose a conversation to read it and answer.</p>}
        </div>
      </div>
    </section>
  )
}
