import { useState } from 'preact/hooks'
import { AI_MODES } from '@switchboard/core/db/values'
import { api } from '../../api.ts'
import { ErrorNotice, Loading } from '../../components/ui.tsx'
import { clock, dateTime } from '../../format.ts'
import { useAction, useData } from '../../hooks.ts'
import { paths } from '../../paths.ts'
import type { AiMode, AssistantTurn, Conversation } from '../../types.ts'
import { REFRESH_MS } from './refresh.ts'

const MODE_HELP: Record<AiMode, string> = {
  OFF: 'Off: the assistant does not answer this conversation.',
  HYBRID: 'Hybrid: the assistant drafts replies; staff approve, edit or reject them.',
  AUTO: 'Auto: the assistant sends its replies at once.'
}

/**
 * The conversation's aiMode; choosing one, even the current one, resumes an assistant a staff reply
 * paused. `model`: the model the account's turns use, null when none is configured (the assistant is off).
 */
export function AssistantMode ({ accountId, conversation, model, onChanged }: { accountId: string, conversation: Conversation, model: string | null | undefined, onChanged: () => void }) {
  const change = useAction(async (aiMode: AiMode) => {
    await api.updateConversation(accountId, conversation.id, { aiMode })
    onChanged()
  })
  return (
    <div class='assistant-mode'>
      <div class='row'>
        <strong id='ai-mode-label'>Assistant</strong>
        {conversation.assistantPaused && <span class='badge status-waiting' id='assistant-paused-badge'>Paused ({conversation.aiMode} when resumed)</span>}
        <div class='view-toggle' role='group' aria-labelledby='ai-mode-label'>
          {AI_MODES.map((mode) => (
            <button key={mode} type='button' aria-pressed={!conversation.assistantPaused && conversation.aiMode === mode} disabled={change.busy} title={MODE_HELP[mode]} onClick={() => { change.run(mode) }}>{mode}</button>
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
export function AssistantActivity ({ accountId, conversationId }: { accountId: string, conversationId: string }) {
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
