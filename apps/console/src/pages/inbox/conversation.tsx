import { useEffect, useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { ErrorNotice, Loading } from '../../components/ui.tsx'
import { useAction, useData } from '../../hooks.ts'
import { loadSession } from '../../session.ts'
import { type Agent, type CannedReply, type ChatMessage, type Conversation } from '../../types.ts'
import { inWindow, NoteReply, TemplateReply, TextReply } from './replies.tsx'
import { Messages } from './messages.tsx'
import { AssistantActivity, AssistantMode } from './assistant.tsx'
import { ContactPanel } from './contact-panel.tsx'
import { LabelEditor } from '../../components/labels.tsx'
import { customerLabel } from '../../customer.ts'

/** A person's name in the inbox: their email, or `you`. */
export const nameOf = (agents: Agent[] | undefined, userId: string): string =>
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
  /** The number's labels, offered when one is added. */
  knownLabels: string[]
  onChanged: () => void
}

export function ConversationView ({ accountId, conversation, model, agents, replies, version, refreshMs, knownLabels, onChanged }: ConversationViewProps) {
  const [older, setOlder] = useState<ChatMessage[]>([])
  const [exhausted, setExhausted] = useState(false)
  const latest = useData(async () => api.messages(accountId, conversation.id), [accountId, conversation.id, version], refreshMs)
  const notes = useData(async () => api.notes(accountId, conversation.id), [accountId, conversation.id, version], refreshMs)
  // Chatwoot's composer: a reply to the customer, or a note for the team.
  const [composer, setComposer] = useState<'reply' | 'note'>('reply')
  // The message a reply quotes, chosen by the message menu's Reply.
  const [quoting, setQuoting] = useState<ChatMessage | null>(null)
  useEffect(() => { setOlder([]); setExhausted(false); setQuoting(null) }, [conversation.id])
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
          <h2 id='conversation-title'>{conversation.name ?? customerLabel(conversation)}</h2>
          <span class='muted mono'>{customerLabel(conversation)}</span>
          {conversation.optedOut && <span class='badge status-failed' id='opted-out' title='The customer opted out of messages: only a reply after they write again can be sent'>Opted out</span>}
        </div>
        <Assignment accountId={accountId} conversation={conversation} agents={agents} onChanged={onChanged} />
        <button type='button' disabled={archive.busy} onClick={() => { archive.run() }}>{conversation.isArchived ? 'Unarchive' : 'Archive'}</button>
      </header>
      <div class='conversation-layout'>
        <div class='thread'>
          <LabelEditor
            of='conversation' labels={conversation.labels} known={knownLabels}
            add={async (label) => { await api.addConversationLabel(accountId, conversation.id, label); onChanged() }}
            remove={async (label) => { await api.removeConversationLabel(accountId, conversation.id, label); onChanged() }}
          />
          <AssistantMode accountId={accountId} conversation={conversation} model={model} onChanged={onChanged} />
          <ErrorNotice error={latest.error ?? notes.error ?? loadOlder.error ?? archive.error} />
          {latest.data !== undefined && latest.data.length >= 50 && !exhausted && (
            <button type='button' class='link-button' disabled={loadOlder.busy} onClick={() => { loadOlder.run() }}>Load older messages</button>
          )}
          {latest.data === undefined ? <Loading what='messages' /> : <Messages accountId={accountId} conversationId={conversation.id} messages={messages} notes={notes.data ?? []} agents={agents} onDecided={sent} onReply={(message) => { setQuoting(message); setComposer('reply') }} />}
          <div class='view-toggle composer-toggle' role='group' aria-label='Write'>
            <button type='button' aria-pressed={composer === 'reply'} onClick={() => { setComposer('reply') }}>Reply</button>
            <button type='button' aria-pressed={composer === 'note'} title='A private note for the team: never sent to the customer' onClick={() => { setComposer('note') }}>Note</button>
          </div>
          {composer === 'note'
            ? <NoteReply accountId={accountId} conversationId={conversation.id} onAdded={() => { notes.reload() }} />
            : inWindow(conversation)
              ? <TextReply accountId={accountId} conversation={conversation} replies={replies} quoting={quoting} onUnquote={() => { setQuoting(null) }} onSent={() => { setQuoting(null); sent() }} />
              : <TemplateReply accountId={accountId} conversation={conversation} onSent={sent} />}
          <AssistantActivity accountId={accountId} conversationId={conversation.id} />
        </div>
        <ContactPanel accountId={accountId} conversation={conversation} knownLabels={knownLabels} />
      </div>
    </section>
  )
}
