import { useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { api } from '../api.ts'
import { AccountSwitcher } from '../components/account-switcher.tsx'
import { ErrorNotice, Loading, PageTitle } from '../components/ui.tsx'
import { byteSize, dateTime } from '../format.ts'
import { useAction, useChatAccount, useData, usePageVisible } from '../hooks.ts'
import { passageLabel } from '../knowledge.ts'
import { paths } from '../paths.ts'
import { chooseAccount } from '../session.ts'
import type { KnowledgeLanguage, KnowledgeSearch, KnowledgeSource, KnowledgeSourceStatus } from '../types.ts'

/** While a source is indexing, the list is read again this often; not at all once none is. */
const POLL_MS = 2000
/** The api's bounds (README, Knowledge): a PDF's bytes, FAQ pairs, a test question. */
const PDF_MAX_BYTES = 20 * 1024 * 1024
const FAQ_MAX_PAIRS = 1000
const QUERY_MAX_CHARS = 1000
const TITLE_MAX_CHARS = 200

type SourceType = KnowledgeSource['type']

const TYPE_LABELS: Record<SourceType, string> = {
  markdown: 'Markdown',
  text: 'Plain text',
  url: 'Web page',
  faq: 'FAQ',
  pdf: 'PDF'
}

/** What each kind of source is, under the choice of it in the form. */
const TYPE_HELP: Record<SourceType, string> = {
  markdown: 'Pasted Markdown: its # headings name the passages under them (Returns › Shoes). Up to 5 MiB.',
  text: 'Pasted plain text, split into passages at paragraphs. Up to 5 MiB.',
  url: 'An HTML, text or PDF page, fetched once when it is indexed (add it anew for a newer page).',
  faq: 'Questions and their answers: each question names the passage of its answer. Up to 1,000 pairs.',
  pdf: 'A PDF file of up to 20 MiB and 500 pages: its larger lines are headings, each passage keeps its page.'
}

const STATUS_LABELS: Record<KnowledgeSourceStatus, { text: string, badge: string }> = {
  indexing: { text: 'indexing', badge: 'status-running' },
  ready: { text: 'ready', badge: 'status-success' },
  failed: { text: 'failed', badge: 'status-failed' }
}

/** The api's text search configurations (README, Knowledge: Retrieval), English first. */
const LANGUAGES: Record<KnowledgeLanguage, string> = {
  english: 'English',
  arabic: 'Arabic',
  danish: 'Danish',
  dutch: 'Dutch',
  finnish: 'Finnish',
  french: 'French',
  german: 'German',
  greek: 'Greek',
  hungarian: 'Hungarian',
  indonesian: 'Indonesian',
  irish: 'Irish',
  italian: 'Italian',
  lithuanian: 'Lithuanian',
  nepali: 'Nepali',
  norwegian: 'Norwegian',
  portuguese: 'Portuguese',
  romanian: 'Romanian',
  russian: 'Russian',
  spanish: 'Spanish',
  swedish: 'Swedish',
  tamil: 'Tamil',
  turkish: 'Turkish',
  simple: 'None of these (words as written)'
}

/** The knowledge page's address for an account, with a source's passages open. */
const knowledgeAddress = (accountId: string, sourceId?: string): string =>
  `${paths.knowledge}?${new URLSearchParams({ account: accountId, ...(sourceId !== undefined && { source: sourceId }) }).toString()}`

/** A score as the ranking gives it, to three significant digits. */
const scoreText = (score: number): string => String(Number(score.toPrecision(3)))

interface Pair { question: string, answer: string }

/**
 * A new source: pasted Markdown or text, a web page's address, FAQ pairs or a PDF file (sent as its
 * bytes). The api answers at once with the source `indexing`; the list shows it become ready.
 */
function AddSource ({ accountId, onAdded }: { accountId: string, onAdded: () => void }) {
  const [type, setType] = useState<SourceType>('markdown')
  const [title, setTitle] = useState('')
  const [content, setContent] = useState('')
  const [url, setUrl] = useState('')
  const [pairs, setPairs] = useState<Pair[]>([{ question: '', answer: '' }])
  const [file, setFile] = useState<File>()
  // The file input shows its file until it is made anew: once sent, a new one is.
  const [fileInput, setFileInput] = useState(0)
  const [language, setLanguage] = useState<KnowledgeLanguage>('english')
  const [added, setAdded] = useState('')
  const setPair = (index: number, change: Partial<Pair>): void => { setPairs(pairs.map((pair, i) => i === index ? { ...pair, ...change } : pair)) }
  const add = useAction(async () => {
    setAdded('')
    const named = title.trim()
    let source: KnowledgeSource
    if (type === 'pdf') {
      if (file === undefined) throw new Error('Choose a PDF file')
      if (file.size > PDF_MAX_BYTES) throw new Error(`The PDF is ${byteSize(file.size)}: at most 20 MiB`)
      source = await api.addPdfSource(accountId, file, { title: named, language })
      setFile(undefined)
      setFileInput((n) => n + 1)
    } else if (type === 'url') {
      source = await api.addKnowledgeSource(accountId, { type, url: url.trim(), language, ...(named !== '' && { title: named }) })
      setUrl('')
    } else if (type === 'faq') {
      source = await api.addKnowledgeSource(accountId, { type, title: named, language, pairs: pairs.map((pair) => ({ question: pair.question.trim(), answer: pair.answer.trim() })) })
      setPairs([{ question: '', answer: '' }])
    } else {
      source = await api.addKnowledgeSource(accountId, { type, title: named, language, content })
      setContent('')
    }
    setTitle('')
    setAdded(`Added ${source.title}: it is being indexed`)
    onAdded()
  })
  const choose = (next: SourceType): void => {
    setType(next)
    setAdded('')
  }
  return (
    <form class='card knowledge-add' aria-labelledby='knowledge-add-title' onSubmit={(event) => { event.preventDefault(); add.run() }}>
      <h2 id='knowledge-add-title'>Add a source</h2>
      <div class='view-toggle' role='group' aria-label='Kind of source'>
        {(Object.keys(TYPE_LABELS) as SourceType[]).map((kind) => (
          <button key={kind} type='button' aria-pressed={type === kind} onClick={() => { choose(kind) }}>{TYPE_LABELS[kind]}</button>
        ))}
      </div>
      <p class='small muted'>{TYPE_HELP[type]}</p>
      {type === 'url' && (
        <>
          <label for='knowledge-url'>Address (http or https)</label>
          <input id='knowledge-url' type='url' required maxLength={2048} placeholder='https://example.com/returns' value={url} onInput={(e) => { setUrl(e.currentTarget.value) }} />
        </>
      )}
      {type === 'pdf' && (
        <>
          <label for='knowledge-file'>PDF file (up to 20 MiB)</label>
          <input
            key={fileInput} id='knowledge-file' type='file' accept='application/pdf,.pdf' required onChange={(e) => {
              const chosen = e.currentTarget.files?.[0]
              setFile(chosen)
              // The file's name is the title, unless one was typed.
              if (chosen !== undefined && title.trim() === '') setTitle(chosen.name.replace(/\.pdf$/i, '').slice(0, TITLE_MAX_CHARS))
            }}
          />
        </>
      )}
      <label for='knowledge-title'>{type === 'url' ? 'Title (empty: the address)' : 'Title'}</label>
      <input id='knowledge-title' required={type !== 'url'} maxLength={TITLE_MAX_CHARS} placeholder='e.g. Returns policy' value={title} onInput={(e) => { setTitle(e.currentTarget.value) }} />
      {(type === 'markdown' || type === 'text') && (
        <>
          <label for='knowledge-content'>{type === 'markdown' ? 'Markdown' : 'Text'}</label>
          <textarea
            id='knowledge-content' rows={10} required class={type === 'markdown' ? 'mono' : undefined} value={content} onInput={(e) => { setContent(e.currentTarget.value) }}
            placeholder={type === 'markdown' ? '# Returns\n## Shoes\nShoes can be returned within 30 days…' : 'Shoes can be returned within 30 days…'}
          />
        </>
      )}
      {type === 'faq' && (
        <ol class='faq-pairs'>
          {pairs.map((pair, index) => (
            <li key={index}>
              <label for={`knowledge-question-${index}`}>Question {index + 1}</label>
              <input id={`knowledge-question-${index}`} required maxLength={1000} value={pair.question} onInput={(e) => { setPair(index, { question: e.currentTarget.value }) }} />
              <label for={`knowledge-answer-${index}`}>Answer {index + 1}</label>
              <textarea id={`knowledge-answer-${index}`} required rows={3} maxLength={10000} value={pair.answer} onInput={(e) => { setPair(index, { answer: e.currentTarget.value }) }} />
              {pairs.length > 1 && <button type='button' aria-label={`Remove question ${index + 1}`} onClick={() => { setPairs(pairs.filter((_pair, i) => i !== index)) }}>Remove</button>}
            </li>
          ))}
          {pairs.length < FAQ_MAX_PAIRS && <li><button type='button' onClick={() => { setPairs([...pairs, { question: '', answer: '' }]) }}>Add a question</button></li>}
        </ol>
      )}
      <label for='knowledge-language'>Language (its stemming and stop words, for search)</label>
      <select id='knowledge-language' value={language} onChange={(e) => { setLanguage(e.currentTarget.value as KnowledgeLanguage) }}>
        {(Object.keys(LANGUAGES) as KnowledgeLanguage[]).map((name) => <option key={name} value={name}>{LANGUAGES[name]}</option>)}
      </select>
      <ErrorNotice error={add.error} />
      <button type='submit' class='primary' disabled={add.busy}>{add.busy ? 'Adding…' : 'Add source'}</button>
      <div role='status' class='small'>{added}</div>
    </form>
  )
}

/** One source in the list: its passages opened by its title; indexed again, or deleted with its passages. */
function SourceRow ({ accountId, source, open, onChanged, onDeleted }: { accountId: string, source: KnowledgeSource, open: boolean, onChanged: () => void, onDeleted: () => void }) {
  const reindex = useAction(async () => {
    await api.reindexKnowledgeSource(accountId, source.id)
    onChanged()
  })
  const remove = useAction(async () => {
    await api.deleteKnowledgeSource(accountId, source.id)
    onDeleted()
  })
  const status = STATUS_LABELS[source.status]
  return (
    <tr data-source={source.id} data-status={source.status} aria-current={open ? 'true' : undefined}>
      <th scope='row'>
        <a href={knowledgeAddress(accountId, source.id)} aria-label={`Passages of ${source.title}`}>{source.title}</a>
        {source.url !== null && source.url !== source.title && <div class='small muted mono source-url'>{source.url}</div>}
      </th>
      <td>{TYPE_LABELS[source.type]}</td>
      <td>
        <span class={`badge ${status.badge}`}>{status.text}</span>
        {source.error !== null && <div class={`small source-error ${source.status === 'failed' ? 'error-text' : 'muted'}`}>{source.error}</div>}
      </td>
      <td class='num'>{source.chunks}</td>
      <td class='num'>{source.pages ?? '—'}</td>
      <td>{dateTime(source.createdAt)}</td>
      <td>
        <div class='row'>
          <button type='button' disabled={reindex.busy || source.status === 'indexing'} aria-label={`Re-index ${source.title}`} title='Index it again from the text kept when it was first read' onClick={() => { reindex.run() }}>Re-index</button>
          <button type='button' class='danger' disabled={remove.busy} aria-label={`Delete ${source.title}`} onClick={() => { if (confirm(`Delete the source ${source.title} and its passages?`)) remove.run() }}>Delete</button>
        </div>
        <ErrorNotice error={reindex.error ?? remove.error} />
      </td>
    </tr>
  )
}

/** A source's first 200 passages: each with the headings it sits under, its page, its text. */
function Passages ({ accountId, source }: { accountId: string, source: KnowledgeSource }) {
  // Read again when the source is indexed again: its passages change.
  const detail = useData(async () => api.knowledgeSource(accountId, source.id), [accountId, source.id, source.status, source.indexedAt])
  const shown = detail.data?.id === source.id ? detail.data.chunkList : undefined
  return (
    <section class='card wide' id='knowledge-passages' aria-labelledby='knowledge-passages-title'>
      <div class='row passages-head'>
        <h2 id='knowledge-passages-title'>Passages of {source.title}</h2>
        <a href={knowledgeAddress(accountId)}>Close</a>
      </div>
      <p class='small muted'>
        {TYPE_LABELS[source.type]} · {LANGUAGES[source.language as KnowledgeLanguage] ?? source.language} · {byteSize(source.bytes)}
        {source.indexedAt !== null && ` · indexed ${dateTime(source.indexedAt)}`}
        {source.chunks > 0 && ` · ${source.chunks} ${source.chunks === 1 ? 'passage' : 'passages'}${shown !== undefined && shown.length < source.chunks ? `, the first ${shown.length} shown` : ''}`}
      </p>
      {source.status === 'indexing' && <p class='notice' role='status'>Indexing: its passages appear once it is ready{source.chunks > 0 ? ' (until then, the earlier ones answer)' : ''}.</p>}
      {source.status === 'failed' && source.error !== null && <p class='notice error'>Failed: {source.error}</p>}
      <ErrorNotice error={detail.error} />
      {shown === undefined
        ? <Loading what='the passages' />
        : shown.length === 0
          ? source.status === 'ready' && <p class='muted'>No passage: the source has no text.</p>
          : (
            <ol class='passages' aria-label={`Passages of ${source.title}`}>
              {shown.map((passage) => (
                <li key={passage.ordinal} data-ordinal={passage.ordinal}>
                  <div class='passage-head'>
                    <strong class='passage-heading'>{passage.heading === '' ? <span class='muted'>No heading</span> : passage.heading}</strong>
                    {passage.page !== null && <span class='muted small passage-page'> · page {passage.page}</span>}
                  </div>
                  <div class='passage-text'>{passage.content}</div>
                </li>
              ))}
            </ol>
            )}
    </section>
  )
}

/** What a turn would be given for a question: the passages put in the prompt, or nothing relevant. */
function TestQuestion ({ accountId, knowledgeOnly }: { accountId: string, knowledgeOnly: boolean | undefined }) {
  const [question, setQuestion] = useState('')
  const [answer, setAnswer] = useState<{ question: string, search: KnowledgeSearch }>()
  const test = useAction(async () => {
    const asked = question.trim()
    setAnswer({ question: asked, search: await api.searchKnowledge(accountId, { query: asked }) })
  })
  return (
    <section class='card' aria-labelledby='knowledge-test-title'>
      <h2 id='knowledge-test-title'>Test a question</h2>
      <p class='small muted'>Ask as a customer would: these are the passages a turn would put in the assistant's prompt, best first.</p>
      <form onSubmit={(event) => { event.preventDefault(); test.run() }}>
        <label for='knowledge-question'>Question</label>
        <div class='row'>
          <input id='knowledge-question' required maxLength={QUERY_MAX_CHARS} placeholder='e.g. Can I return shoes?' value={question} onInput={(e) => { setQuestion(e.currentTarget.value) }} />
          <button type='submit' class='primary test-button' disabled={test.busy || question.trim() === ''}>{test.busy ? 'Searching…' : 'Test'}</button>
        </div>
      </form>
      <ErrorNotice error={test.error} />
      <div id='knowledge-test-results' aria-live='polite'>
        {answer !== undefined && (answer.search.relevant && answer.search.results.length > 0
          ? (
            <ol class='passages' aria-label={`Passages for: ${answer.question}`}>
              {answer.search.results.map((result, index) => (
                <li key={`${result.sourceId}-${index}`} data-source={result.sourceId}>
                  <div class='passage-head'>
                    <strong class='passage-heading'>{passageLabel({ ...result, page: null })}</strong>
                    {result.page !== null && <span class='muted small passage-page'> · page {result.page}</span>}
                    <span class='muted small passage-score'> · score {scoreText(result.score)}</span>
                  </div>
                  <div class='passage-text'>{result.content}</div>
                </li>
              ))}
            </ol>
            )
          : (
            <p class='notice' id='knowledge-nothing-relevant'>
              Nothing relevant: the assistant would not use the knowledge.{' '}
              {knowledgeOnly === true
                ? 'Answer from the knowledge only is on: it would hand the conversation over to a person.'
                : 'It would answer without it; with Answer from the knowledge only on, it would hand the conversation over to a person.'}
            </p>
            ))}
      </div>
    </section>
  )
}

/**
 * An account's knowledge (README, Knowledge): its sources, added, indexed again and deleted; a
 * source's passages; what a question would retrieve. While a source is indexing, the list is read
 * again every couple of seconds, and not at all once none is.
 */
export function Knowledge () {
  const { query, route } = useLocation()
  const { accounts, choices, accountId } = useChatAccount(query.account)
  const visible = usePageVisible()
  const [indexing, setIndexing] = useState(false)
  // Each read says whose sources it holds: the list shows only its account's.
  const sources = useData(async () => {
    if (accountId === undefined) return undefined
    const list = await api.knowledgeSources(accountId)
    setIndexing(list.some((source) => source.status === 'indexing'))
    return { accountId, list }
  }, [accountId], indexing && visible ? POLL_MS : null)
  const assistant = useData(async () => accountId === undefined ? undefined : { accountId, settings: await api.assistantSettings(accountId) }, [accountId])
  const list = sources.data?.accountId === accountId ? sources.data?.list : undefined
  const open = list?.find((source) => source.id === query.source)
  const knowledgeOnly = assistant.data?.accountId === accountId ? assistant.data?.settings.answerFromKnowledgeOnly : undefined
  const settingsAddress = accountId === undefined ? undefined : `${paths.chatSettings}?account=${encodeURIComponent(accountId)}`
  return (
    <section>
      <PageTitle actions={<>{settingsAddress !== undefined && <a href={settingsAddress}>Assistant and consent</a>}<AccountSwitcher choices={choices} value={accountId ?? ''} onChange={(id) => { chooseAccount(id); route(knowledgeAddress(id), true) }} /></>}>Knowledge</PageTitle>
      <p class='muted' id='knowledge-intro'>
        The assistant answers from these documents: each turn retrieves the passages that answer the customer and puts them in its prompt, and its draft shows which ones it was based on.
        {knowledgeOnly !== undefined && settingsAddress !== undefined && (
          <> Answer from the knowledge only is {knowledgeOnly ? 'on: with nothing relevant, a conversation is handed over to a person' : 'off: with nothing relevant, the assistant answers without the knowledge'} (<a href={settingsAddress}>change it</a>).</>
        )}
      </p>
      <ErrorNotice error={accounts.error ?? sources.error ?? assistant.error} />
      <div class='grid'>
        <section class='card wide' aria-labelledby='knowledge-sources-title'>
          <h2 id='knowledge-sources-title'>Sources</h2>
          {accountId === undefined || list === undefined
            ? <Loading what='the sources' />
            : list.length === 0
              ? <p id='no-sources'>No source yet: add one below.</p>
              : (
                <div class='table-wrap'>
                  <table id='knowledge-sources'>
                    <thead>
                      <tr>
                        <th scope='col'>Title</th><th scope='col'>Type</th><th scope='col'>Status</th><th scope='col' class='num'>Passages</th>
                        <th scope='col' class='num'>Pages</th><th scope='col'>Added</th><th scope='col'><span class='visually-hidden'>Actions</span></th>
                      </tr>
                    </thead>
                    <tbody>
                      {list.map((source) => (
                        <SourceRow
                          key={source.id} accountId={accountId} source={source} open={source.id === open?.id} onChanged={() => { sources.reload() }}
                          onDeleted={() => { if (source.id === query.source) route(knowledgeAddress(accountId), true); sources.reload() }}
                        />
                      ))}
                    </tbody>
                  </table>
                </div>
                )}
          {indexing && <p class='small muted' role='status'>Indexing: the list refreshes every {POLL_MS / 1000} seconds until every source is ready.</p>}
        </section>
        {accountId !== undefined && open !== undefined && <Passages key={open.id} accountId={accountId} source={open} />}
        {accountId !== undefined && list !== undefined && query.source !== undefined && open === undefined && <p class='notice card wide'>This source is not among the account's: deleted, or of another account.</p>}
        {accountId !== undefined && <AddSource key={accountId} accountId={accountId} onAdded={() => { sources.reload() }} />}
        {accountId !== undefined && <TestQuestion key={accountId} accountId={accountId} knowledgeOnly={knowledgeOnly} />}
      </div>
    </section>
  )
}
