import { useEffect, useRef, useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { ErrorNotice, FailureReason, StatusTicks } from '../../components/ui.tsx'
import { clock, dateTime } from '../../format.ts'
import { useAction, useData } from '../../hooks.ts'
import { paths } from '../../paths.ts'
import { templatePreview, type TemplatePreview } from '../../template-preview.ts'
import type { Agent, ChatMessage, ConversationNote, DraftStatus, MessageStatus, Template } from '../../types.ts'
import { TemplateText } from '../../components/template-text.tsx'
import { draftSources } from '../../knowledge.ts'

/** What a draft the assistant wrote says beside it, by its status: staff decide the pending ones. */
const DRAFT_LABELS: Record<DraftStatus, string> = {
  pending_approval: 'Draft by the assistant, waiting for approval: not sent yet',
  rejected: 'Rejected draft: never sent',
  stale: 'Stale draft: the customer wrote again before it was decided; never sent'
}
type DraftMessage = ChatMessage & { status: DraftStatus }
const isDraft = (message: ChatMessage): message is DraftMessage => message.status !== null && Object.hasOwn(DRAFT_LABELS, message.status)

/**
 * A draft of the assistant in the thread: Approve sends it as written, Edit sends it as changed,
 * Reject never sends it. Drafts decided or left stale stay in the thread, muted, with their status.
 */
function Draft ({ accountId, conversationId, message, onDecided }: { accountId: string, conversationId: string, message: DraftMessage, onDecided: () => void }) {
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
  const sources = draftSources(message)
  return (
    <li class={`message outbound draft${pending ? '' : ' draft-closed'}`} data-direction='outbound' data-draft={message.status}>
      <span class='draft-label small'>{DRAFT_LABELS[message.status]}</span>
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
      {sources.length > 0 && (
        <p class='draft-sources small'>
          Based on: {sources.map((label, index) => <span key={label}>{index > 0 && '; '}<cite>{label}</cite></span>)}
        </p>
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

type FlowReplyDetails = NonNullable<NonNullable<ChatMessage['details']>['flowReply']>

/** Why a completed flow's answers were not kept (README, Flows: their bounds). */
const UNREADABLE: Record<NonNullable<FlowReplyDetails['unreadable']>, string> = {
  too_large: 'over 64 KiB',
  too_deep: 'nested more than 20 levels',
  not_json: 'not a JSON object'
}
/** A response's fields shown, and each value's characters: the thread stays readable whatever the flow sent. */
const FLOW_FIELDS_SHOWN = 30
const FLOW_VALUE_CHARS = 200

function flowValue (value: unknown): string {
  const text = typeof value === 'string' ? value : Array.isArray(value) && value.every((item) => typeof item !== 'object') ? value.join(', ') : JSON.stringify(value)
  return text.length > FLOW_VALUE_CHARS ? `${text.slice(0, FLOW_VALUE_CHARS)}…` : text
}

/**
 * A completed flow: the customer's answers as a key/value list, by name (stored as jsonb, they keep no
 * order of their own); its flow_token, the business's own id, left out.
 */
function FlowReply ({ reply }: { reply: FlowReplyDetails }) {
  if (reply.unreadable !== undefined) return <span class='flow-reply muted'>Form completed; its answers were not kept ({UNREADABLE[reply.unreadable]}).</span>
  const fields = Object.entries(reply.response).filter(([key]) => key !== 'flow_token').sort(([a], [b]) => a.localeCompare(b))
  return (
    <div class='flow-reply'>
      <span class='small muted'>Form completed</span>
      {fields.length > 0 && (
        <dl>
          {fields.slice(0, FLOW_FIELDS_SHOWN).map(([key, value]) => <div key={key}><dt>{key}</dt><dd>{flowValue(value)}</dd></div>)}
        </dl>
      )}
      {fields.length > FLOW_FIELDS_SHOWN && <span class='small muted'>and {fields.length - FLOW_FIELDS_SHOWN} more</span>}
    </div>
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

/** A private note in the thread (README, The team inbox: notes): staff's or a workflow's, never sent to the customer. */
function Note ({ note }: { note: ConversationNote }) {
  const author = note.authorName ?? (note.runId === null ? 'a deleted user' : 'a workflow')
  return (
    <li class='message note' data-note={note.id}>
      <span class='note-label small'>Note by {author}, only staff see it</span>
      <div class='bubble'>{note.text}</div>
      <div class='meta'>
        <time dateTime={note.createdAt} title={dateTime(note.createdAt)}>{clock(note.createdAt)}</time>
      </div>
    </li>
  )
}

/** Messages and notes in one thread, oldest first; of the same time, the message first. */
function thread (messages: ChatMessage[], notes: ConversationNote[]): Array<{ message: ChatMessage } | { note: ConversationNote }> {
  const entries: Array<{ message: ChatMessage } | { note: ConversationNote }> = []
  let next = 0
  for (const message of messages) {
    for (; next < notes.length && notes[next].createdAt < message.createdAt; next++) entries.push({ note: notes[next] })
    entries.push({ message })
  }
  for (; next < notes.length; next++) entries.push({ note: notes[next] })
  return entries
}

interface MessagesProps {
  accountId: string
  conversationId: string
  messages: ChatMessage[]
  notes: ConversationNote[]
  agents: Agent[] | undefined
  onDecided: () => void
  /** The message menu's Reply: the composer quotes it. */
  onReply: (message: ChatMessage) => void
}

export function Messages ({ accountId, conversationId, messages, notes, agents, onDecided, onReply }: MessagesProps) {
  // The platform's templates, read only when the thread holds a template message to show as it was read.
  const withTemplates = messages.some((message) => message.type === 'template')
  const templates = useData(async () => withTemplates ? await api.templates(accountId) : undefined, [accountId, withTemplates])
  // A reaction shows on the message it reacts to (its `reactions`): its own row only when that message is not on screen.
  const shown = new Set(messages.map((message) => message.id))
  const visible = messages.filter((message) => message.reaction?.messageId == null || !shown.has(message.reaction.messageId))
  return (
    <ol class='messages' aria-label='Messages and notes, oldest first'>
      {thread(visible, notes).map((entry) => 'note' in entry
        ? <Note key={entry.note.id} note={entry.note} />
        : isDraft(entry.message)
          ? <Draft key={entry.message.id} accountId={accountId} conversationId={conversationId} message={entry.message} onDecided={onDecided} />
          : <Message key={entry.message.id} accountId={accountId} message={entry.message} agents={agents} templates={templates.data} onReply={onReply} onChanged={onDecided} />)}
    </ol>
  )
}

/** A place as a plain link to the map (no map library): OpenStreetMap at the pin. */
const mapLink = (location: NonNullable<ChatMessage['location']>): string =>
  `https://www.openstreetmap.org/?mlat=${location.latitude}&mlon=${location.longitude}#map=16/${location.latitude}/${location.longitude}`

function Location ({ location }: { location: NonNullable<ChatMessage['location']> }) {
  return (
    <span class='location'>
      <a href={mapLink(location)} target='_blank' rel='noopener noreferrer'>📍 {location.name ?? `${location.latitude}, ${location.longitude}`}</a>
      {location.address !== undefined && <span class='small muted'>{location.address}</span>}
    </span>
  )
}

const cardText = (value: unknown, key: string): string | undefined => {
  const text = (value as Record<string, unknown> | undefined)?.[key]
  return typeof text === 'string' ? text : undefined
}

/** Contact cards: each one's name and phones. */
function Cards ({ contacts }: { contacts: NonNullable<ChatMessage['contacts']> }) {
  return (
    <ul class='contact-cards'>
      {contacts.map((card, i) => (
        <li key={i} class='contact-card'>
          <strong>{cardText(card.name, 'formatted_name') ?? 'Contact'}</strong>
          {(Array.isArray(card.phones) ? card.phones : []).map((phone, j) => <span key={j} class='small mono'>{cardText(phone, 'phone')}</span>)}
        </li>
      ))}
    </ul>
  )
}

/** The emoji the message menu offers: the platform's quick reactions. */
const REACTIONS = ['👍', '❤️', '😂', '😮', '😢', '🙏']

/** Reply (the composer quotes the message) and React, for a message the platform knows (it has a wamid). */
function MessageMenu ({ accountId, message, onReply, onChanged }: { accountId: string, message: ChatMessage, onReply: (message: ChatMessage) => void, onChanged: () => void }) {
  // The menu closes once an action is chosen.
  const menu = useRef<HTMLDetailsElement>(null)
  const close = (): void => { if (menu.current !== null) menu.current.open = false }
  const react = useAction(async (emoji: string) => {
    await api.react(accountId, message.id, emoji)
    close()
    onChanged()
  })
  const mine = message.reactions?.business
  return (
    <details class='message-menu' ref={menu}>
      <summary aria-label='Message actions' title='Reply or react'>⋯</summary>
      <div class='message-menu-items'>
        <button type='button' class='link-button' onClick={() => { close(); onReply(message) }}>Reply</button>
        <div role='group' aria-label='React' class='row'>
          {REACTIONS.map((emoji) => (
            <button key={emoji} type='button' class='emoji' aria-pressed={mine === emoji} disabled={react.busy} aria-label={`React ${emoji}`} title={`React ${emoji}`} onClick={() => { react.run(mine === emoji ? '' : emoji) }}>{emoji}</button>
          ))}
        </div>
        <ErrorNotice error={react.error} />
      </div>
    </details>
  )
}

/** Who sent an outbound message, in words: a person by their email, the assistant, a consent confirmation, or what sent it. */
function senderText (message: ChatMessage, agents: Agent[] | undefined): string {
  const sender = message.sender
  if (sender === null) return message.agentName ?? 'someone'
  switch (sender.type) {
    case 'user': return agents?.find((agent) => agent.id === sender.id)?.email ?? message.agentName ?? 'a person'
    case 'assistant': return 'the assistant'
    case 'workflow': return 'a workflow'
    case 'broadcast': return 'a broadcast'
    case 'consent': return sender.id === 'optIn' ? 'the opt-in confirmation' : 'the opt-out confirmation'
  }
}

/** Who sent it (README, The team inbox: who sent a message), with a link to the run or broadcast that did. */
function SenderLine ({ message, agents }: { message: ChatMessage, agents: Agent[] | undefined }) {
  const sender = message.sender
  return (
    <span class='sender' data-sender={sender?.type ?? 'unknown'}>
      {senderText(message, agents)}
      {sender?.runId !== undefined && <> · <a href={paths.run(sender.runId)}>its run</a></>}
      {sender?.type === 'broadcast' && <> · <a href={paths.broadcast(sender.id)}>the broadcast</a></>}
    </span>
  )
}

/**
 * A template message as the customer read it: the template's text (the platform's list) with the
 * body's parameters the send kept; undefined when the send kept its own text, or the template is
 * not listed (deleted since, or the number has no business account to list them from).
 */
function readTemplate (message: ChatMessage, templates: Template[] | undefined): TemplatePreview | undefined {
  const kept = message.templateContent
  if (message.type !== 'template' || kept === null || typeof kept.body === 'string') return undefined
  const template = templates?.find((candidate) => candidate.name === kept.templateName && candidate.language === kept.lang)
  const parameters = Array.isArray(kept.bodyParameters) ? kept.bodyParameters.map(String) : []
  return template === undefined ? undefined : templatePreview(template, parameters)
}

/** What a message says in its bubble, by its kind. */
function Body ({ accountId, message, template }: { accountId: string, message: ChatMessage, template: TemplatePreview | undefined }) {
  if (template !== undefined) return <TemplateText preview={template} />
  if (message.details?.flowReply !== undefined) return <FlowReply reply={message.details.flowReply} />
  if (message.location !== null) return <Location location={message.location} />
  if (message.contacts !== null) return <Cards contacts={message.contacts} />
  if (message.reaction !== null) return <>{message.reaction.emoji === '' ? 'Removed a reaction' : `Reacted ${message.reaction.emoji}`} to a message not shown here</>
  return message.media?.id === undefined ? <>{message.content}</> : <Media accountId={accountId} message={message} />
}

interface MessageProps {
  accountId: string
  message: ChatMessage
  agents: Agent[] | undefined
  templates: Template[] | undefined
  onReply: (message: ChatMessage) => void
  onChanged: () => void
}

function Message ({ accountId, message, agents, templates, onReply, onChanged }: MessageProps) {
  const outbound = message.direction === 'outbound'
  const template = readTemplate(message, templates)
  const { customer, business } = message.reactions ?? {}
  return (
    <li class={`message ${message.direction}`} data-direction={message.direction} data-message={message.id}>
      <span class='visually-hidden'>{outbound ? `Sent by ${senderText(message, agents)}: ` : 'Customer: '}</span>
      {message.replyTo !== null && (
        <blockquote class='quote small' data-quote={message.replyTo.id}>
          <span class='muted'>{message.replyTo.direction === 'inbound' ? 'The customer' : 'You'} wrote: </span>{message.replyTo.content}
        </blockquote>
      )}
      <div class='bubble'><Body accountId={accountId} message={message} template={template} /></div>
      {(customer !== undefined || business !== undefined) && (
        <div class='reactions' aria-label='Reactions'>
          {customer !== undefined && <span class='reaction' data-by='customer' title='The customer’s reaction'>{customer}</span>}
          {business !== undefined && <span class='reaction' data-by='business' title='Your reaction'>{business}</span>}
        </div>
      )}
      {message.wamid !== null && message.type !== 'reaction' && <MessageMenu accountId={accountId} message={message} onReply={onReply} onChanged={onChanged} />}
      <div class='meta'>
        {outbound && <SenderLine message={message} agents={agents} />}
        <time dateTime={message.createdAt} title={dateTime(message.createdAt)}>{clock(message.createdAt)}</time>
        {outbound && <StatusTicks status={message.status as MessageStatus | null} />}
      </div>
      {message.status === 'failed' && message.error !== null && <FailureReason error={message.error} />}
    </li>
  )
}
