import { useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { ErrorNotice, StatusTicks } from '../../components/ui.tsx'
import { useAction, useData, usePageVisible } from '../../hooks.ts'
import type { ChatMessage, DraftStatus, MessageStatus, NodeTypeInfo, Workflow, WorkflowNode } from '../../types.ts'

/** How often the pane reads the conversation, once the user wrote in it, while the page is visible. */
const POLL_MS = 1000
const CHAT_MESSAGE_RECEIVED = 'chat.message.received'
/** The chat nodes that act on the trigger's number without an accountId (README, Conversations). */
const ON_TRIGGER_NUMBER = new Set(['ask', 'handoff'])
/** How long the pane looks for the run a message started, to show it on the canvas: 10 looks 300 ms apart. */
const RUN_LOOKS = 10
const RUN_LOOK_MS = 300
/** The assistant's drafts are never sent: the thread names them instead of ticking them. */
const DRAFTS: Record<DraftStatus, string> = { pending_approval: 'draft, waiting for approval', rejected: 'draft, rejected', stale: 'draft, stale' }

function Status ({ message }: { message: ChatMessage }) {
  if (message.direction !== 'outbound') return null
  if (message.status !== null && Object.hasOwn(DRAFTS, message.status)) return <span class='muted small'>{DRAFTS[message.status as DraftStatus]}</span>
  return <StatusTicks status={message.status as MessageStatus | null} />
}

/** Whether a customer's message starts the workflow: KEYWORD, or an EVENT workflow of `chat.message.received`. */
export const triedInChat = (workflow: Pick<Workflow, 'triggerType' | 'triggerConfig'>): boolean =>
  workflow.triggerType === 'KEYWORD' ||
  (workflow.triggerType === 'EVENT' && (workflow.triggerConfig as { eventName?: unknown } | null)?.eventName === CHAT_MESSAGE_RECEIVED)

/**
 * "Try it in chat" (README, Sandbox numbers): the user types as a customer of one of their sandbox
 * numbers, and reads the conversation as the workflow answers it, delivered without the platform.
 * Chat nodes answer the sandbox number only when their `accountId` names it (`{{triggerData.accountId}}`).
 */
export function TryInChat ({ workflow, nodes, nodeTypes, onRun }: { workflow: Workflow, nodes: WorkflowNode[], nodeTypes: NodeTypeInfo[], onRun: (runId: string) => void }) {
  const accounts = useData(api.accounts, [])
  const sandboxes = (accounts.data ?? []).filter((account) => account.sandbox)
  const [chosen, setChosen] = useState<string>()
  const accountId = chosen ?? sandboxes[0]?.id
  const [phone, setPhone] = useState('15550100001')
  const [name, setName] = useState('Test customer')
  const [text, setText] = useState('')
  const [wrote, setWrote] = useState(false)
  const visible = usePageVisible()
  const conversation = useData(
    async () => accountId === undefined ? undefined : (await api.conversations(accountId, {})).find((candidate) => candidate.phone === phone),
    [accountId, phone], wrote && visible && accountId !== undefined ? POLL_MS : null
  )
  const create = useAction(async () => {
    setChosen((await api.createSandbox('Sandbox')).id)
    accounts.reload()
  })
  const newestRun = async (): Promise<string | undefined> => (await api.runs({ workflowId: workflow.id, limit: 1 }))[0]?.id
  const send = useAction(async () => {
    if (accountId === undefined) return
    const before = await newestRun()
    await api.playInbound(accountId, { from: phone, name, text })
    setText('')
    setWrote(true)
    conversation.reload()
    // A message that starts the workflow is followed on the canvas; one an ask takes goes on in the run shown.
    for (let look = 0; look < RUN_LOOKS; look++) {
      await new Promise((resolve) => setTimeout(resolve, RUN_LOOK_MS))
      const newest = await newestRun()
      if (newest !== undefined && newest !== before) { onRun(newest); return }
    }
  })
  const chatTypes = new Set(nodeTypes.filter((type) => type.category === 'Chat').map((type) => type.type))
  const unnamed = nodes.filter((node) => chatTypes.has(node.type) && !ON_TRIGGER_NUMBER.has(node.type) && typeof node.config?.accountId !== 'string').map((node) => node.id)

  return (
    <section aria-labelledby='try-chat-title' id='try-chat'>
      <h3 id='try-chat-title'>Try it in chat</h3>
      <p class='muted small'>Write as a customer of a sandbox number: the message reaches this workflow as a real one would, and nothing leaves the machine.</p>
      {!workflow.isActive && <p class='notice small'>The workflow is inactive: activate it to hear messages.</p>}
      {unnamed.length > 0 && <p class='notice small'>{unnamed.join(', ')}: no accountId, so {unnamed.length === 1 ? 'it answers' : 'they answer'} from your real number. Set accountId to {'{{triggerData.accountId}}'} to answer the number that received the message.</p>}
      <ErrorNotice error={accounts.error} />
      {accounts.data !== undefined && sandboxes.length === 0
        ? <button type='button' disabled={create.busy} onClick={() => { create.run() }}>{create.busy ? 'Creating…' : 'Create sandbox number'}</button>
        : (
          <>
            <label for='try-chat-account'>Sandbox number</label>
            <select id='try-chat-account' value={accountId} onChange={(e) => { setChosen(e.currentTarget.value) }}>
              {sandboxes.map((account) => <option key={account.id} value={account.id}>{account.name} ({account.displayPhoneNumber ?? account.phoneNumberId})</option>)}
            </select>
            <label for='try-chat-phone'>Customer number</label>
            <input id='try-chat-phone' inputMode='numeric' pattern='[0-9]{6,15}' value={phone} onChange={(e) => { setPhone(e.currentTarget.value) }} />
            <label for='try-chat-name'>Customer name</label>
            <input id='try-chat-name' maxLength={200} value={name} onInput={(e) => { setName(e.currentTarget.value) }} />
            <ol class='try-chat-thread' aria-label='Conversation' aria-live='polite'>
              {(conversation.data?.messages ?? []).map((message) => (
                <li key={message.id} class={message.direction === 'inbound' ? 'from-customer' : 'to-customer'}>
                  <span>{message.content}</span>
                  <Status message={message} />
                </li>
              ))}
            </ol>
            <form class='row' onSubmit={(event) => { event.preventDefault(); send.run() }}>
              <input aria-label='Message as the customer' required maxLength={4096} value={text} onInput={(e) => { setText(e.currentTarget.value) }} placeholder='Type as the customer' />
              <button type='submit' class='primary' disabled={send.busy || accountId === undefined}>{send.busy ? 'Sending…' : 'Send'}</button>
            </form>
          </>
          )}
      <ErrorNotice error={create.error ?? send.error ?? conversation.error} />
    </section>
  )
}
