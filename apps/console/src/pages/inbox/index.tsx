import { useEffect, useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { api, ApiError } from '../../api.ts'
import { AccountSwitcher } from '../../components/account-switcher.tsx'
import { ErrorNotice, Loading, PageTitle } from '../../components/ui.tsx'
import { ago } from '../../format.ts'
import { CannedReplies } from '../../components/canned-replies.tsx'
import { useChatAccount, useData } from '../../hooks.ts'
import { useInboxEvents } from '../../live.ts'
import { paths } from '../../paths.ts'
import { chooseAccount, DEFAULT_ACCOUNT } from '../../session.ts'
import type { ConversationFilter } from '../../types.ts'
import { ConversationView, nameOf } from './conversation.tsx'
import { LIVE_REFRESH_MS, REFRESH_MS } from './refresh.ts'
import { customerAddress, customerLabel } from '../../customer.ts'

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

export function Inbox () {
  const { query, route } = useLocation()
  const { accounts, choices, accountId } = useChatAccount(query.account)
  const filter: ConversationFilter = { filter: query.filter, sort: query.sort, assigned: query.assigned, label: query.label, mentions: query.mentions }
  const live = useInboxEvents(accountId)
  const refreshMs = live.connected ? LIVE_REFRESH_MS : REFRESH_MS
  const conversations = useData(async () => accountId === undefined ? [] : api.conversations(accountId, filter),
    [accountId, query.filter, query.sort, query.assigned, query.label, query.mentions, live.version], refreshMs)
  const agents = useData(async () => accountId === undefined ? undefined : api.agents(accountId), [accountId])
  const replies = useData(async () => accountId === undefined ? undefined : api.cannedReplies(accountId), [accountId])
  const open = conversations.data?.find((conversation) => conversation.id === query.c)
  // Whether the account's assistant has a model: without one it is off, whatever each conversation's mode.
  const assistant = useData(async () => accountId === undefined ? undefined : api.assistantSettings(accountId), [accountId])
  // The number's labels, offered when one is added: read again when a conversation is changed here, not at each poll (the count reads every conversation and contact).
  const labels = useData(async () => accountId === undefined ? [] : api.labels(accountId), [accountId])
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
  const settingsLink = accountId === undefined ? undefined : <a href={`${paths.chatSettings}?account=${encodeURIComponent(accountId)}`}>Assistant and consent</a>
  const title = <PageTitle actions={<>{state}{settingsLink}<AccountSwitcher choices={choices} value={accountId ?? ''} onChange={(id) => { go({ account: id, c: '' }) }} /></>}>Inbox</PageTitle>
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
            <label>Notes
              <select value={query.mentions ?? ''} onChange={(e) => { go({ mentions: e.currentTarget.value }) }}>
                <option value=''>Any</option>
                <option value='me'>Mentioning me</option>
              </select>
            </label>
            <LabelFilter value={query.label ?? ''} onChange={(label) => { go({ label }) }} />
          </form>
          {conversations.data === undefined
            ? <Loading what='conversations' />
            : conversations.data.length === 0
              ? <p class='muted' id='no-conversations'>{Object.values(filter).some((value) => value !== undefined && value !== '') ? 'No conversation matches these filters.' : 'No conversation yet: a customer\'s first message opens one.'}</p>
              : (
                <ul class='conversations' aria-label='Conversations'>
                  {conversations.data.map((conversation) => (
                    <li key={conversation.id}>
                      <a
                        href={`${paths.inbox}?${new URLSearchParams({ ...query, c: conversation.id }).toString()}`}
                        aria-current={conversation.id === query.c ? 'true' : undefined}
                        data-conversation={customerAddress(conversation)}
                      >
                        <span class='contact'><strong>{conversation.name ?? customerLabel(conversation)}</strong>{conversation.isPinned && <span class='muted'> · pinned</span>}</span>
                        <span class='badges'>
                          {conversation.pendingApprovalCount > 0 && <span class='drafts-badge' title='Drafts of the assistant waiting for approval'>{conversation.pendingApprovalCount} {conversation.pendingApprovalCount === 1 ? 'draft' : 'drafts'}</span>}
                          {conversation.unreadCount > 0 && <span class='unread' aria-label={`${conversation.unreadCount} unread`}>{conversation.unreadCount}</span>}
                        </span>
                        <span class='last muted'>{conversation.lastMessage ?? ''}</span>
                        {conversation.labels.length > 0 && <span class='tags'>{conversation.labels.map((label) => <span key={label} class='tag'>{label}</span>)}</span>}
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
                  version={live.version} refreshMs={refreshMs} knownLabels={(labels.data ?? []).map((label) => label.name)} onChanged={() => { conversations.reload(); labels.reload() }}
                />
              </>
              )
            : <p class='muted placeholder'>Choose a conversation to read it and answer.</p>}
        </div>
      </div>
    </section>
  )
}
