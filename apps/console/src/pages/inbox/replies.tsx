import { useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { ErrorNotice } from '../../components/ui.tsx'
import { dateTime } from '../../format.ts'
import { ReplyText } from '../../components/canned-replies.tsx'
import { useAction, useData } from '../../hooks.ts'
import { loadSession } from '../../session.ts'
import { placeholderCount, templatePreview } from '../../template-preview.ts'
import { type CannedReply, type ChatMessage, type Conversation } from '../../types.ts'
import { customerAddress } from '../../customer.ts'

/** Free text is allowed within 24 hours of the customer's latest message (README, Chat). */
const WINDOW_MS = 24 * 3600 * 1000

export const inWindow = (conversation: Conversation): boolean =>
  conversation.lastIncomingAt !== null && Date.now() - Date.parse(conversation.lastIncomingAt) < WINDOW_MS

export function TemplateReply ({ accountId, conversation, onSent }: { accountId: string, conversation: Conversation, onSent: () => void }) {
  const templates = useData(async () => (await api.templates(accountId)).filter((template) => template.status === 'APPROVED'), [accountId])
  const [chosen, setChosen] = useState('')
  const [values, setValues] = useState<string[]>([])
  const template = templates.data?.find((candidate) => `${candidate.name}|${candidate.language}` === chosen)
  const count = placeholderCount(template)
  const preview = template === undefined ? '' : templatePreview(template, values).body
  const send = useAction(async () => {
    if (template === undefined) throw new Error('Pick a template first')
    const parameters = Array.from({ length: count }, (_, i) => values[i] ?? '')
    await api.sendTemplate(accountId, { to: customerAddress(conversation), templateName: template.name, lang: template.language, parameters, body: preview, agentName: loadSession()?.user.email ?? 'console' })
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
      {Array.from({ length: count }, (_, i) => (
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

interface TextReplyProps {
  accountId: string
  conversation: Conversation
  replies: CannedReply[]
  /** The message the reply quotes (README, Message kinds: quoted replies), or null. */
  quoting: ChatMessage | null
  onUnquote: () => void
  onSent: () => void
}

export function TextReply ({ accountId, conversation, replies, quoting, onUnquote, onSent }: TextReplyProps) {
  const [text, setText] = useState('')
  const send = useAction(async () => {
    await api.sendText(accountId, customerAddress(conversation), text.trim(), loadSession()?.user.email ?? 'console', quoting?.id)
    setText('')
    onSent()
  })
  const until = conversation.lastIncomingAt === null ? '' : dateTime(new Date(Date.parse(conversation.lastIncomingAt) + WINDOW_MS).toISOString())
  return (
    <form class='reply' onSubmit={(event) => { event.preventDefault(); send.run() }}>
      <label for='reply-text'>Reply <span class='muted'>(free text allowed until {until}, 24 hours after the customer’s last message)</span></label>
      {quoting !== null && (
        <div class='reply-quote'>
          <blockquote class='quote small' id='reply-quote'><span class='muted'>Replying to: </span>{quoting.content}</blockquote>
          <button type='button' class='link-button' onClick={onUnquote}>Cancel the quote</button>
        </div>
      )}
      <ReplyText id='reply-text' value={text} onInput={setText} onSend={() => { send.run() }} replies={replies} />
      <ErrorNotice error={send.error} />
      <button type='submit' class='primary' disabled={send.busy || text.trim() === ''}>{send.busy ? 'Sending…' : 'Send'}</button>
      <span class='muted small'> Ctrl+Enter sends; <kbd>/</kbd> inserts a canned reply.</span>
    </form>
  )
}

/** A private note (README, The team inbox: notes): only staff see it, in the thread; `@email` mentions someone who can use the account. */
export function NoteReply ({ accountId, conversationId, onAdded }: { accountId: string, conversationId: string, onAdded: () => void }) {
  const [text, setText] = useState('')
  const add = useAction(async () => {
    await api.addNote(accountId, conversationId, text.trim())
    setText('')
    onAdded()
  })
  return (
    <form class='reply note-reply' onSubmit={(event) => { event.preventDefault(); add.run() }}>
      <label for='note-text'>Note <span class='muted'>(only staff see it, never sent to the customer; <code>@email</code> mentions someone who can use this account)</span></label>
      <textarea id='note-text' rows={3} maxLength={4000} value={text} onInput={(e) => { setText(e.currentTarget.value) }} />
      <ErrorNotice error={add.error} />
      <button type='submit' class='primary' disabled={add.busy || text.trim() === ''}>{add.busy ? 'Adding…' : 'Add note'}</button>
    </form>
  )
}
