import { useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { api } from '../api.ts'
import { AccountSwitcher } from '../components/account-switcher.tsx'
import { ErrorNotice, Loading, PageTitle } from '../components/ui.tsx'
import { dateTime } from '../format.ts'
import { useAction, useAddressFilters, useChatAccount, useData } from '../hooks.ts'
import { paths } from '../paths.ts'
import { chooseAccount } from '../session.ts'
import type { AssistantSettings, ConsentSettings } from '../types.ts'

/** Keywords as typed, one a line. */
const linesOf = (text: string): string[] => text.split('\n').map((line) => line.trim()).filter((line) => line !== '')

/**
 * The account's assistant (README, The assistant): what it is told, its model and key, how long it lets
 * a customer finish typing, and whether it answers only from the knowledge (README, Knowledge).
 */
function AssistantForm ({ accountId, settings, onSaved }: { accountId: string, settings: AssistantSettings, onSaved: () => void }) {
  const credentials = useData(api.credentials, [])
  const [instructions, setInstructions] = useState(settings.instructions)
  const [answerAlways, setAnswerAlways] = useState(settings.answerAlways)
  const [model, setModel] = useState(settings.model ?? '')
  const [keyId, setKeyId] = useState(settings.apiKeyCredentialId ?? '')
  const [debounceMs, setDebounceMs] = useState(String(settings.debounceMs))
  const [knowledgeOnly, setKnowledgeOnly] = useState(settings.answerFromKnowledgeOnly)
  const [saved, setSaved] = useState('')
  const save = useAction(async () => {
    setSaved('')
    await api.saveAssistantSettings(accountId, {
      instructions,
      answerAlways,
      model: model.trim() === '' ? null : model.trim(),
      apiKeyCredentialId: keyId === '' ? null : keyId,
      // Sent as typed: the api says what it accepts (an integer from 0 to 30000).
      debounceMs: Number(debounceMs),
      answerFromKnowledgeOnly: knowledgeOnly
    })
    setSaved('Saved: the next turns use these settings')
    onSaved()
  })
  return (
    <form class='card' aria-labelledby='assistant-title' onSubmit={(event) => { event.preventDefault(); save.run() }}>
      <h2 id='assistant-title'>Assistant</h2>
      <p class='small muted'>{settings.effectiveModel === null ? 'Off for this number: no model is set here or in AI_MODEL.' : `Answers with ${settings.effectiveModel}.`} Each conversation's mode (Off, Hybrid, Auto) is set in the inbox.</p>
      <label for='assistant-instructions'>Instructions</label>
      <textarea id='assistant-instructions' rows={8} maxLength={8000} placeholder='e.g. You answer for Ana’s Bakery: opening hours 8–18, deliveries within the city…' value={instructions} onInput={(e) => { setInstructions(e.currentTarget.value) }} />
      <label class='check'>
        <input type='checkbox' checked={answerAlways} onChange={(e) => { setAnswerAlways(e.currentTarget.checked) }} /> Answer also the messages a KEYWORD workflow matched
      </label>
      <label for='assistant-model'>Model (empty: AI_MODEL)</label>
      <input id='assistant-model' maxLength={200} placeholder='e.g. gpt-4o-mini' value={model} onInput={(e) => { setModel(e.currentTarget.value) }} />
      <label for='assistant-key'>API key (a bearer credential; none: AI_API_KEY)</label>
      <select id='assistant-key' value={keyId} onChange={(e) => { setKeyId(e.currentTarget.value) }}>
        <option value=''>None</option>
        {(credentials.data ?? []).filter((credential) => credential.type === 'bearer' || credential.id === keyId).map((credential) => <option key={credential.id} value={credential.id}>{credential.name}</option>)}
      </select>
      <label for='assistant-debounce'>Wait for more messages (ms, 0 to 30000)</label>
      <input id='assistant-debounce' type='number' min={0} max={30000} step={100} value={debounceMs} onInput={(e) => { setDebounceMs(e.currentTarget.value) }} />
      <label class='check'>
        <input type='checkbox' aria-describedby='assistant-knowledge-only-help' checked={knowledgeOnly} onChange={(e) => { setKnowledgeOnly(e.currentTarget.checked) }} /> Answer from the knowledge only
      </label>
      <p id='assistant-knowledge-only-help' class='small muted check-help'>
        When the <a href={`${paths.knowledge}?account=${encodeURIComponent(accountId)}`}>knowledge</a> has nothing relevant to the customer's message, hand the conversation over to a person instead of answering.
      </p>
      <ErrorNotice error={save.error ?? credentials.error} />
      <button type='submit' class='primary' disabled={save.busy}>Save assistant</button>
      <div role='status' class='small'>{saved}{saved === '' && settings.updatedAt !== null && `Last changed ${dateTime(settings.updatedAt)}`}</div>
    </form>
  )
}

/** The number's opt-out and opt-in keywords and the confirmations it answers them with (README, Contacts and consent). */
function ConsentForm ({ accountId, settings, onSaved }: { accountId: string, settings: ConsentSettings, onSaved: () => void }) {
  const [optOut, setOptOut] = useState(settings.optOutKeywords.join('\n'))
  const [optIn, setOptIn] = useState(settings.optInKeywords.join('\n'))
  const [optOutConfirmation, setOptOutConfirmation] = useState(settings.optOutConfirmation)
  const [optInConfirmation, setOptInConfirmation] = useState(settings.optInConfirmation)
  const [saved, setSaved] = useState('')
  const save = useAction(async () => {
    setSaved('')
    await api.saveConsentSettings(accountId, { optOutKeywords: linesOf(optOut), optInKeywords: linesOf(optIn), optOutConfirmation, optInConfirmation })
    setSaved('Saved: the next messages are matched against these keywords')
    onSaved()
  })
  return (
    <form class='card' aria-labelledby='consent-title' onSubmit={(event) => { event.preventDefault(); save.run() }}>
      <h2 id='consent-title'>Consent keywords</h2>
      <p class='small muted'>A customer's whole message matching a keyword (any case) opts them out or back in, and is answered with the confirmation.</p>
      <label for='consent-opt-out'>Opt-out keywords, one a line</label>
      <textarea id='consent-opt-out' rows={5} value={optOut} onInput={(e) => { setOptOut(e.currentTarget.value) }} />
      <label for='consent-opt-out-confirmation'>Opt-out confirmation</label>
      <textarea id='consent-opt-out-confirmation' rows={2} value={optOutConfirmation} onInput={(e) => { setOptOutConfirmation(e.currentTarget.value) }} />
      <label for='consent-opt-in'>Opt-in keywords, one a line</label>
      <textarea id='consent-opt-in' rows={4} value={optIn} onInput={(e) => { setOptIn(e.currentTarget.value) }} />
      <label for='consent-opt-in-confirmation'>Opt-in confirmation</label>
      <textarea id='consent-opt-in-confirmation' rows={2} value={optInConfirmation} onInput={(e) => { setOptInConfirmation(e.currentTarget.value) }} />
      <ErrorNotice error={save.error} />
      <button type='submit' class='primary' disabled={save.busy}>Save consent keywords</button>
      <div role='status' class='small'>{saved}{saved === '' && (settings.updatedAt === null ? 'The defaults' : `Last changed ${dateTime(settings.updatedAt)}`)}</div>
    </form>
  )
}

/**
 * A chat number's settings: its assistant and its consent keywords (its knowledge has a page of its own), per account (the default
 * account's only an admin changes: the api answers 403 to anyone else, shown on the form).
 */
export function ChatSettings () {
  const { query } = useLocation()
  const { accounts, choices, accountId } = useChatAccount(query.account)
  // Each read says whose settings it holds: a form shows only its account's, and starts anew for another account.
  const assistant = useData(async () => accountId === undefined ? undefined : { accountId, settings: await api.assistantSettings(accountId) }, [accountId])
  const consent = useData(async () => accountId === undefined ? undefined : { accountId, settings: await api.consentSettings(accountId) }, [accountId])
  const setFilter = useAddressFilters(paths.chatSettings)
  return (
    <section>
      <PageTitle actions={<>{accountId !== undefined && <a href={`${paths.knowledge}?account=${encodeURIComponent(accountId)}`}>Knowledge</a>}<AccountSwitcher choices={choices} value={accountId ?? ''} onChange={(id) => { chooseAccount(id); setFilter('account', id) }} /></>}>Chat settings</PageTitle>
      <ErrorNotice error={accounts.error ?? assistant.error ?? consent.error} />
      <div class='grid'>
        {accountId === undefined || assistant.data?.accountId !== accountId
          ? <Loading what='the assistant' />
          : <AssistantForm key={accountId} accountId={accountId} settings={assistant.data.settings} onSaved={() => { assistant.reload() }} />}
        {accountId === undefined || consent.data?.accountId !== accountId
          ? <Loading what='the consent keywords' />
          : <ConsentForm key={accountId} accountId={accountId} settings={consent.data.settings} onSaved={() => { consent.reload() }} />}
      </div>
    </section>
  )
}
