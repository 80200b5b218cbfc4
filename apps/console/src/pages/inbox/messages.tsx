import { useEffect, useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { ErrorNotice, FailureReason, StatusTicks } from '../../components/ui.tsx'
import { clock, dateTime } from '../../format.ts'
import { useAction, useData } from '../../hooks.ts'
import { paths } from '../../paths.ts'
import { templatePreview, type TemplatePreview } from '../../template-preview.ts'
import type { Agent, ChatMessage, ConversationNote, DraftStatus, MessageStatus, Template } from '../../types.ts'
import { TemplateText } from '../../components/template-text.tsx'

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

export function Messages ({ accountId, conversationId, messages, notes, agents, onDecided }: { accountId: string, conversationId: string, messages: ChatMessage[], notes: ConversationNote[], agents: Agent[] | undefined, onDecided: () => void }) {
  // The platform's templates, read only when the thread holds a template message to show as it was read.
  const withTemplates = messages.some((message) => message.type === 'template')
  const templates = useData(async () => withTemplates ? await api.templates(accountId) : undefined, [accountId, withTemplates])
  return (
    <ol class='messages' aria-label='Messages and notes, oldest first'>
      {thread(messages, notes).map((entry) => 'note' in entry
        ? <Note key={entry.note.id} note={entry.note} />
        : isDraft(entry.message)
          ? <Draft key={entry.message.id} accountId={accountId} conversationId={conversationId} message={entry.message} onDecided={onDecided} />
          : <Message key={entry.message.id} accountId={accountId} message={entry.message} agents={agents} templates={templates.data} />)}
    </ol>
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

function Message ({ accountId, message, agents, templates }: { accountId: string, message: ChatMessage, agents: Agent[] | undefined, templates: Template[] | undefined }) {
  const outbound = message.direction === 'outbound'
  const template = readTemplate(message, templates)
  return (
    <li class={`message ${message.direction}`} data-direction={message.direction}>
      <span class='visually-hidden'>{outbound ? `Sent by ${senderText(message, agents)}: ` : 'Customer: '}</span>
      <div class='bubble'>
        {template !== undefined
          ? <TemplateText preview={template} />
          : message.details?.flowReply !== undefined
            ? <FlowReply reply={message.details.flowReply} />
            : message.media?.id === undefined ? message.content : <Media accountId={accountId} message={message} />}
      </div>
      <div class='meta'>
        {outbound && <SenderLine message={message} agents={agents} />}
        <time dateTime={message.createdAt} title={dateTime(message.createdAt)}>{clock(message.createdAt)}</time>
        {outbound && <StatusTicks status={message.status as MessageStatus | null} />}
      </div>
      {message.status === 'failed' && message.error !== null && <FailureReason error={message.error} />}
    </li>
  )
}
