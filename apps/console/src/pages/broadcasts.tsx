import { useState } from 'preact/hooks'
import { useLocation, useRoute } from 'preact-iso'
import { BROADCAST_COUNT_STATUSES as RECIPIENT_STATUSES } from '@switchboard/core/db/values'
import { api, ApiError } from '../api.ts'
import { accountChoices, accountLabel, type AccountChoice } from '../chat-accounts.ts'
import { ErrorNotice, FailureReason, Loading, PageTitle, Pager } from '../components/ui.tsx'
import { ago, dateTime } from '../format.ts'
import { useAction, useAddressFilters, useChatAccount, useData, usePageVisible } from '../hooks.ts'
import { paths } from '../paths.ts'
import type { Broadcast, BroadcastInput, BroadcastStatus, RecipientStatus, Template } from '../types.ts'
import { placeholderCount, templatePreview } from '../template-preview.ts'
import { TemplateText } from '../components/template-text.tsx'

const PAGE = 50
/** A broadcast is read again this often while it is scheduled or sending and the page is visible. */
const LIVE_MS = 2000
const DEFAULT_RATE = 20
const MAX_RATE = 1000

const LIVE: readonly BroadcastStatus[] = ['scheduled', 'sending']
/**
 * Whether the broadcast still moves: scheduled or sending, or cancelled while sends that waited for
 * the rate are still being skipped by their senders (counted queued for a moment).
 */
const isLive = (broadcast: Broadcast): boolean => LIVE.includes(broadcast.status) || (broadcast.status === 'cancelled' && broadcast.counts.queued > 0)

/** Each broadcast status in the badge colours of run statuses. */
const STATUS_BADGES: Record<BroadcastStatus, string> = {
  scheduled: 'status-pending',
  sending: 'status-running',
  paused: 'status-waiting',
  cancelled: 'status-cancelled',
  done: 'status-success'
}

function BroadcastBadge ({ status }: { status: BroadcastStatus }) {
  return <span class={`badge ${STATUS_BADGES[status]}`} data-broadcast-status={status}>{status}</span>
}

/** Counts in the bar's order: what reached customers first, then what did not, then what waits. */
const BAR_ORDER: RecipientStatus[] = ['read', 'delivered', 'sent', 'failed', 'skipped', 'queued']

const countsSummary = (broadcast: Broadcast): string =>
  BAR_ORDER.filter((status) => broadcast.counts[status] > 0).map((status) => `${broadcast.counts[status]} ${status}`).join(' · ') || 'no recipients'

/** The recipients by status as one stacked bar, its numbers in its name. */
function CountsBar ({ broadcast }: { broadcast: Broadcast }) {
  const total = Math.max(1, BAR_ORDER.reduce((sum, status) => sum + broadcast.counts[status], 0))
  let x = 0
  return (
    <svg class='counts-bar' viewBox='0 0 100 6' preserveAspectRatio='none' role='img' aria-label={countsSummary(broadcast)}>
      {BAR_ORDER.filter((status) => broadcast.counts[status] > 0).map((status) => {
        const width = broadcast.counts[status] / total * 100
        const bar = <rect key={status} class={`count-${status}`} x={x} y={0} width={width} height={6}><title>{`${broadcast.counts[status]} ${status}`}</title></rect>
        x += width
        return bar
      })}
    </svg>
  )
}

/** Every broadcast the viewer may see (their own; an admin's: all), newest first. */
export function Broadcasts () {
  const { query, route } = useLocation()
  const offset = Number(query.offset ?? 0) || 0
  const visible = usePageVisible()
  const [live, setLive] = useState(false)
  const list = useData(async () => {
    const page = await api.broadcasts(PAGE, offset)
    setLive(page.some(isLive))
    return page
  }, [offset], visible && live ? LIVE_MS : null)
  const accounts = useData(api.accounts, [])
  const choices = accounts.data === undefined ? [] : accountChoices(accounts.data)
  const manyAccounts = choices.length > 1
  return (
    <section>
      <PageTitle actions={<a class='button primary' href={paths.newBroadcast}>New broadcast</a>}>Broadcasts</PageTitle>
      <p class='muted'>One approved template to many customers, at a rate the platform accepts. Open one to pause, resume or cancel it and to see each recipient’s result.</p>
      <ErrorNotice error={list.error ?? accounts.error} />
      {list.data === undefined
        ? <Loading what='broadcasts' />
        : list.data.length === 0
          ? offset > 0
            ? <p>No more broadcasts.</p>
            : (
              <div class='card empty-state'>
                <h2>No broadcasts yet</h2>
                <p>A broadcast sends one approved template to a list of numbers or to the contacts with a label.</p>
                <p><a class='button primary' href={paths.newBroadcast}>Create your first broadcast</a></p>
              </div>
              )
          : (
            <div class='table-wrap'>
              <table id='broadcasts'>
                <thead>
                  <tr>
                    <th scope='col'>Template</th>{manyAccounts && <th scope='col'>Account</th>}<th scope='col'>Status</th><th scope='col' class='num'>Total</th>
                    <th scope='col'>Recipients</th><th scope='col'>Created</th><th scope='col' class='num'>Rate</th>
                  </tr>
                </thead>
                <tbody>
                  {list.data.map((broadcast) => (
                    <tr key={broadcast.id} data-broadcast={broadcast.id}>
                      <th scope='row'><a href={paths.broadcast(broadcast.id)}>{broadcast.templateName}</a> <span class='muted small'>{broadcast.lang}</span></th>
                      {manyAccounts && <td>{accountLabel(choices, broadcast.accountId)}</td>}
                      <td><BroadcastBadge status={broadcast.status} /></td>
                      <td class='num'>{broadcast.total}</td>
                      <td class='counts-cell'><CountsBar broadcast={broadcast} /><span class='small'>{countsSummary(broadcast)}</span></td>
                      <td><time dateTime={broadcast.createdAt} title={dateTime(broadcast.createdAt)}>{ago(broadcast.createdAt)}</time></td>
                      <td class='num'>{broadcast.ratePerSecond}/s</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            )}
      {list.data !== undefined && <Pager offset={offset} limit={PAGE} count={list.data.length} onChange={(next) => { route(`${paths.broadcasts}${next === 0 ? '' : `?offset=${next}`}`, true) }} />}
    </section>
  )
}

/** The pasted numbers, one per line, blank lines left out, each with its line for the api's errors. */
function numbersOf (text: string): Array<{ to: string, line: number }> {
  return text.split('\n').map((line, n) => ({ to: line.trim(), line: n + 1 })).filter((number) => number.to !== '')
}

/** The api names a bad number by its index in the list sent (`recipients[3].to …`): the line it was pasted on too. */
function withLine (err: unknown, numbers: Array<{ to: string, line: number }>): unknown {
  if (!(err instanceof ApiError)) return err
  const index = /^recipients\[(\d+)\]/.exec(err.message)
  const number = index === null ? undefined : numbers[Number(index[1])]
  return number === undefined ? err : new ApiError(err.status, err.code, `${err.message} (line ${number.line}: ${number.to})`)
}

function AccountField ({ choices, value, onChange }: { choices: AccountChoice[], value: string, onChange: (id: string) => void }) {
  if (choices.length < 2) return null
  return (
    <>
      <label for='broadcast-account'>Chat account</label>
      <select id='broadcast-account' value={value} onChange={(e) => { onChange(e.currentTarget.value) }}>
        {choices.map((choice) => <option key={choice.id} value={choice.id}>{choice.label}</option>)}
      </select>
    </>
  )
}

/** How long a broadcast of `count` takes at `rate` a second, roughly, as people say it. */
const durationOf = (count: number, rate: number): string => {
  const seconds = Math.ceil(count / Math.max(1, rate))
  return seconds < 90 ? `about ${seconds} s` : `about ${Math.round(seconds / 60)} min`
}

interface ReviewProps {
  accountId: string
  template: Template
  values: string[]
  audience: { numbers: number } | { label: string }
  rate: number
  sendAt: string
  /** Creates the broadcast; its refusal shows here, where it was confirmed. */
  onConfirm: () => Promise<void>
  onChange: () => void
}

/**
 * What a broadcast will send, to how many, confirmed before anything is sent: a label's contacts are
 * counted by the api (GET /api/chat/labels); those who opted out are skipped when it sends.
 */
function BroadcastReview ({ accountId, template, values, audience, rate, sendAt, onConfirm, onChange }: ReviewProps) {
  const send = useAction(onConfirm)
  const labels = useData(async () => 'label' in audience ? await api.labels(accountId) : undefined, [accountId, 'label' in audience])
  const count = 'numbers' in audience ? audience.numbers : labels.data?.find((label) => label.name === audience.label)?.contacts ?? (labels.data === undefined ? undefined : 0)
  const who = 'numbers' in audience ? `${audience.numbers} ${audience.numbers === 1 ? 'number' : 'numbers'}` : `${count ?? '…'} ${count === 1 ? 'contact' : 'contacts'} labelled ${audience.label}`
  return (
    <section class='card broadcast-review' aria-labelledby='broadcast-review-title'>
      <h2 id='broadcast-review-title'>Send {template.name} ({template.language}) to {who}?</h2>
      <ErrorNotice error={labels.error} />
      <p>
        {sendAt === '' ? 'Starts now' : `Starts ${dateTime(new Date(sendAt).toISOString())}`}, at {rate} a second{count === undefined || count === 0 ? '' : `: ${durationOf(count, rate)}`}.
        {'label' in audience && ' Contacts who opted out are skipped.'}
      </p>
      {count === 0 && <p class='notice error' role='alert'>No contact carries this label: nobody would get it.</p>}
      <div class='template-preview' aria-label='The message as the customer reads it'><TemplateText preview={templatePreview(template, values)} /></div>
      <ErrorNotice error={send.error} />
      <div class='row'>
        <button type='button' class='primary' disabled={send.busy || count === undefined || count === 0} onClick={() => { send.run() }}>{send.busy ? 'Creating…' : `Send to ${who}`}</button>
        <button type='button' disabled={send.busy} onClick={onChange}>Change</button>
      </div>
    </section>
  )
}

/** The form of a new broadcast: template and language, the audience, the rate and an optional send time. */
export function NewBroadcast () {
  const { route } = useLocation()
  const [picked, setPicked] = useState<string | undefined>(undefined)
  const { accounts, choices, accountId } = useChatAccount(picked)
  const templates = useData(async () => accountId === undefined ? undefined : (await api.templates(accountId)).filter((template) => template.status === 'APPROVED'), [accountId])
  const [name, setName] = useState('')
  const [lang, setLang] = useState('')
  const [values, setValues] = useState<string[]>([])
  const [audience, setAudience] = useState<'numbers' | 'label'>('numbers')
  const [numbers, setNumbers] = useState('')
  const [label, setLabel] = useState('')
  const [rate, setRate] = useState(String(DEFAULT_RATE))
  const [sendAt, setSendAt] = useState('')

  const names = [...new Set((templates.data ?? []).map((template) => template.name))]
  const languages = (templates.data ?? []).filter((template) => template.name === name).map((template) => template.language)
  const language = languages.includes(lang) ? lang : languages[0] ?? ''
  const template = templates.data?.find((candidate) => candidate.name === name && candidate.language === language)
  const count = placeholderCount(template)
  const listed = numbersOf(numbers)

  const [reviewing, setReviewing] = useState(false)
  /** What is about to be sent, checked before it is shown for confirmation. */
  const review = useAction(async () => {
    if (accountId === undefined) throw new Error('No chat account to send from')
    if (template === undefined) throw new Error('Choose a template')
    if (audience === 'numbers' && listed.length === 0) throw new Error('Paste at least one phone number, one per line')
    if (audience === 'label' && label.trim() === '') throw new Error('Name the label whose contacts get it')
    setReviewing(true)
  })
  const create = async (): Promise<void> => {
    if (accountId === undefined || template === undefined) return
    const components = count === 0 ? undefined : [{ type: 'body', parameters: Array.from({ length: count }, (_, i) => ({ type: 'text', text: values[i] ?? '' })) }]
    const input: BroadcastInput = {
      templateName: template.name,
      lang: template.language,
      // Sent as typed: the api says what it accepts (an integer from 1 to 1000).
      ratePerSecond: rate.trim() === '' ? DEFAULT_RATE : Number(rate),
      ...(sendAt !== '' && { sendAt: new Date(sendAt).toISOString() }),
      ...(audience === 'numbers'
        ? { recipients: listed.map((number) => ({ to: number.to, ...(components !== undefined && { components }) })) }
        : { label: label.trim(), ...(components !== undefined && { components }) })
    }
    try {
      const created = await api.createBroadcast(accountId, input)
      route(paths.broadcast(created.id))
    } catch (err) {
      throw withLine(err, listed)
    }
  }

  return (
    <section>
      <PageTitle>New broadcast</PageTitle>
      <form class='card broadcast-form' noValidate onSubmit={(event) => { event.preventDefault(); review.run() }}>
        <fieldset class='plain' disabled={reviewing}>
          <ErrorNotice error={accounts.error ?? templates.error} />
          <AccountField choices={choices} value={accountId ?? ''} onChange={(id) => { setPicked(id); setName(''); setValues([]) }} />
          <div class='form-pair'>
            <div>
              <label for='broadcast-template'>Template</label>
              <select id='broadcast-template' value={name} disabled={templates.data === undefined} onChange={(e) => { setName(e.currentTarget.value); setLang(''); setValues([]) }}>
                <option value=''>{templates.data === undefined ? 'Loading templates…' : names.length === 0 ? 'No approved template' : 'Choose a template'}</option>
                {names.map((candidate) => <option key={candidate} value={candidate}>{candidate}</option>)}
              </select>
            </div>
            <div>
              <label for='broadcast-language'>Language</label>
              <select id='broadcast-language' value={language} disabled={languages.length === 0} onChange={(e) => { setLang(e.currentTarget.value); setValues([]) }}>
                {languages.length === 0 && <option value=''>Choose a template first</option>}
                {languages.map((candidate) => <option key={candidate} value={candidate}>{candidate}</option>)}
              </select>
            </div>
          </div>
          {Array.from({ length: count }, (_, i) => (
            <div key={i}>
              <label for={`broadcast-param-${i + 1}`}>{`Value of {{${i + 1}}}`} <span class='muted'>(text, or each contact's own: {'{{contact.name}}'}, {'{{contact.attributes.plan}}'})</span></label>
              <input id={`broadcast-param-${i + 1}`} value={values[i] ?? ''} onInput={(e) => { const next = [...values]; next[i] = e.currentTarget.value; setValues(next) }} />
            </div>
          ))}
          <fieldset class='audience'>
            <legend>Audience</legend>
            <label class='check'><input type='radio' name='audience' checked={audience === 'numbers'} onChange={() => { setAudience('numbers') }} /> Phone numbers</label>
            <label class='check'><input type='radio' name='audience' checked={audience === 'label'} onChange={() => { setAudience('label') }} /> Contacts with a label</label>
            {audience === 'numbers'
              ? (
                <>
                  <label for='broadcast-numbers'>Phone numbers <span class='muted'>(international form, one per line; up to 10,000; a number listed twice is sent once)</span></label>
                  <textarea id='broadcast-numbers' class='mono' rows={8} value={numbers} onInput={(e) => { setNumbers(e.currentTarget.value) }} placeholder={'+1 555 010 0001\n+44 20 7946 0000'} />
                  <p class='muted small' aria-live='polite'>{listed.length} {listed.length === 1 ? 'number' : 'numbers'}</p>
                </>
                )
              : (
                <>
                  <label for='broadcast-label'>Label <span class='muted'>(every contact of the account carrying it, in phone order)</span></label>
                  <input id='broadcast-label' maxLength={50} value={label} onInput={(e) => { setLabel(e.currentTarget.value) }} />
                </>
                )}
          </fieldset>
          <div class='form-pair'>
            <div>
              <label for='broadcast-rate'>Rate <span class='muted'>(messages per second, 1 to {MAX_RATE})</span></label>
              <input id='broadcast-rate' type='number' inputMode='numeric' min={1} max={MAX_RATE} step={1} value={rate} onInput={(e) => { setRate(e.currentTarget.value) }} />
            </div>
            <div>
              <label for='broadcast-send-at'>Send at <span class='muted'>(optional: empty sends now)</span></label>
              <input id='broadcast-send-at' type='datetime-local' value={sendAt} onInput={(e) => { setSendAt(e.currentTarget.value) }} />
            </div>
          </div>
          <ErrorNotice error={review.error} />
          <div class='row'>
            <button type='submit' class='primary' disabled={accountId === undefined}>Review</button>
            <a class='button' href={paths.broadcasts}>Back to broadcasts</a>
          </div>
        </fieldset>
      </form>
      {reviewing && template !== undefined && accountId !== undefined && (
        <BroadcastReview
          accountId={accountId} template={template} values={values} audience={audience === 'numbers' ? { numbers: listed.length } : { label: label.trim() }}
          rate={rate.trim() === '' ? DEFAULT_RATE : Number(rate)} sendAt={sendAt} onConfirm={create} onChange={() => { setReviewing(false) }}
        />
      )}
    </section>
  )
}

const ACTIONS = {
  pause: { label: 'Pause', from: ['scheduled', 'sending'] },
  resume: { label: 'Resume', from: ['paused'] },
  cancel: { label: 'Cancel', from: ['scheduled', 'sending', 'paused'] }
} as const satisfies Record<string, { label: string, from: readonly BroadcastStatus[] }>
type Action = keyof typeof ACTIONS

/** One broadcast: its counts, Pause / Resume / Cancel, and each recipient's result, read again while it sends. */
export function BroadcastPage () {
  const { params } = useRoute()
  const { query } = useLocation()
  const id = params.id
  const status = RECIPIENT_STATUSES.find((candidate) => candidate === query.status)
  const offset = Number(query.offset ?? 0) || 0
  const visible = usePageVisible()
  const [live, setLive] = useState(false)
  const every = visible && live ? LIVE_MS : null
  const loaded = useData(async () => {
    const broadcast = await api.broadcast(id)
    setLive(isLive(broadcast))
    return broadcast
  }, [id], every)
  const recipients = useData(async () => api.broadcastRecipients(id, { status, limit: PAGE, offset }), [id, status, offset], every)
  const accounts = useData(api.accounts, [])
  const change = useAction(async (action: Action) => {
    try {
      await api.changeBroadcast(id, action)
    } finally {
      // Changed here or not (409: it moved on meanwhile), the page shows where the broadcast is now.
      loaded.reload()
      recipients.reload()
    }
  })

  const setFilter = useAddressFilters(paths.broadcast(id))

  const broadcast = loaded.data?.id === id ? loaded.data : undefined
  if (broadcast === undefined) {
    return loaded.error === undefined ? <Loading what='the broadcast' /> : <><PageTitle>Broadcast</PageTitle><ErrorNotice error={loaded.error} /></>
  }
  const choices = accounts.data === undefined ? [] : accountChoices(accounts.data)
  const actions = (Object.keys(ACTIONS) as Action[]).filter((action) => (ACTIONS[action].from as readonly BroadcastStatus[]).includes(broadcast.status))
  return (
    <section>
      <PageTitle actions={
        <>
          {actions.map((action) => (
            <button
              key={action} type='button' class={action === 'cancel' ? 'danger' : undefined} disabled={change.busy}
              onClick={() => { if (action !== 'cancel' || confirm('Cancel this broadcast? The recipients not sent yet are skipped; it cannot be resumed.')) change.run(action) }}
            >{ACTIONS[action].label}
            </button>
          ))}
        </>
      }
      >Broadcast of {broadcast.templateName}
      </PageTitle>
      <p class='broadcast-status' aria-live='polite'>
        <BroadcastBadge status={broadcast.status} />
        {every !== null && <span class='muted'> live: updated every 2 seconds</span>}
      </p>
      <ErrorNotice error={change.error ?? loaded.error} />
      <div class='grid'>
        <section class='card' aria-labelledby='broadcast-facts-title'>
          <h2 id='broadcast-facts-title'>Broadcast</h2>
          <dl class='facts'>
            <dt>Template</dt><dd>{broadcast.templateName} <span class='muted'>({broadcast.lang})</span></dd>
            <dt>Account</dt><dd>{accountLabel(choices, broadcast.accountId)}</dd>
            <dt>Rate</dt><dd>{broadcast.ratePerSecond} messages per second</dd>
            <dt>Send at</dt><dd>{dateTime(broadcast.sendAt)}</dd>
            <dt>Created</dt><dd>{dateTime(broadcast.createdAt)}</dd>
            <dt>Finished</dt><dd>{dateTime(broadcast.finishedAt)}</dd>
            {broadcast.repeated > 0 && <><dt>Repeated</dt><dd title='Sends started again after a worker stopped during them: each may have reached its customer twice'>{broadcast.repeated}</dd></>}
          </dl>
        </section>
        <section class='card' aria-labelledby='broadcast-counts-title'>
          <h2 id='broadcast-counts-title'>{broadcast.total} recipients</h2>
          <CountsBar broadcast={broadcast} />
          <ul class='broadcast-counts'>
            {RECIPIENT_STATUSES.map((name) => (
              <li key={name}>
                <span class={`swatch count-${name}`} aria-hidden='true' />
                <button type='button' class='link-button' aria-pressed={status === name} title={`List the ${name} recipients`} onClick={() => { setFilter('status', status === name ? '' : name) }}>{name}</button>
                {' '}<strong data-count={name}>{broadcast.counts[name]}</strong>
              </li>
            ))}
          </ul>
        </section>
        <section class='card wide' aria-labelledby='recipients-title'>
          <h2 id='recipients-title'>Recipients</h2>
          <form class='filters' aria-label='Filter recipients' onSubmit={(event) => { event.preventDefault() }}>
            <label>Status
              <select value={status ?? ''} onChange={(e) => { setFilter('status', e.currentTarget.value) }}>
                <option value=''>Any</option>
                {RECIPIENT_STATUSES.map((name) => <option key={name} value={name}>{name}</option>)}
              </select>
            </label>
          </form>
          <ErrorNotice error={recipients.error} />
          {recipients.data === undefined
            ? <Loading what='recipients' />
            : recipients.data.length === 0
              ? <p>{offset > 0 ? 'No more recipients.' : status === undefined ? 'No recipients.' : `No recipient is ${status}.`}</p>
              : (
                <div class='table-wrap'>
                  <table id='recipients'>
                    <thead>
                      <tr><th scope='col' class='num'>#</th><th scope='col'>Phone</th><th scope='col'>Status</th><th scope='col' class='num'>Attempts</th><th scope='col'>Sent</th><th scope='col'>Why</th></tr>
                    </thead>
                    <tbody>
                      {recipients.data.map((recipient) => (
                        <tr key={recipient.position} data-recipient={recipient.phone} data-status={recipient.status}>
                          <td class='num'>{recipient.position + 1}</td>
                          <th scope='row' class='mono'>+{recipient.phone}</th>
                          <td>{recipient.status}</td>
                          <td class='num'>{recipient.attempts}</td>
                          <td>{dateTime(recipient.sentAt)}</td>
                          <td class={recipient.status === 'failed' ? 'error-text' : 'muted'}>{recipient.error !== null && <FailureReason error={recipient.error} prefix='' />}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
                )}
          {recipients.data !== undefined && <Pager offset={offset} limit={PAGE} count={recipients.data.length} onChange={(next) => { setFilter('offset', String(next)) }} />}
        </section>
      </div>
    </section>
  )
}
