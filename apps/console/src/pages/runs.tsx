import { useEffect, useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { RUN_STATUSES } from '@switchboard/core/db/values'
import { api } from '../api.ts'
import { RunList } from '../components/runs-table.tsx'
import { ErrorNotice, Loading, PageTitle, Pager } from '../components/ui.tsx'
import { useAddressFilters, useData } from '../hooks.ts'
import { paths } from '../paths.ts'

const PAGE = 50
const REFRESH_MS = 5000

const PERIODS: Record<string, { label: string, ms: number }> = {
  '1h': { label: 'Last hour', ms: 3600_000 },
  '24h': { label: 'Last 24 hours', ms: 24 * 3600_000 },
  '7d': { label: 'Last 7 days', ms: 7 * 24 * 3600_000 }
}

/**
 * Every run the user may see, newest first, filtered by workflow, status, creation time, the words of its id,
 * trigger data or error and a tag (in the address, README, Finding runs): how each started, its tags, its
 * error, and child runs collapsed under their parent.
 */
export function Runs () {
  const { query } = useLocation()
  const offset = Number(query.offset ?? 0) || 0
  const period = PERIODS[query.period ?? '']
  const workflows = useData(async () => api.workflows({ limit: 500 }), [])
  const runs = useData(async () => api.runs({
    workflowId: query.workflowId,
    status: query.status,
    test: query.test,
    since: period === undefined ? undefined : new Date(Date.now() - period.ms).toISOString(),
    q: query.q,
    tag: query.tag,
    limit: PAGE,
    offset
  }), [query.workflowId, query.status, query.test, query.period, query.q, query.tag, offset], REFRESH_MS)
  const listed = new Map((workflows.data ?? []).map((workflow) => [workflow.id, workflow]))

  const setFilter = useAddressFilters(paths.runs)
  // The words are searched when submitted (Enter), not at each key.
  const [words, setWords] = useState(query.q ?? '')
  useEffect(() => { setWords(query.q ?? '') }, [query.q])

  return (
    <section>
      <PageTitle>Runs</PageTitle>
      <form class='filters' aria-label='Filter runs' onSubmit={(event) => { event.preventDefault(); setFilter('q', words.trim()) }}>
        <label>Search
          <input type='search' value={words} maxLength={200} placeholder='order 1234, 502, a run id' onInput={(e) => { setWords(e.currentTarget.value) }} />
        </label>
        <button type='submit'>Search</button>
        <label>Workflow
          <select value={query.workflowId ?? ''} onChange={(e) => { setFilter('workflowId', e.currentTarget.value) }}>
            <option value=''>Any</option>
            {query.workflowId !== undefined && !listed.has(query.workflowId) && <option value={query.workflowId}>{query.workflowId}</option>}
            {(workflows.data ?? []).map((workflow) => <option key={workflow.id} value={workflow.id}>{workflow.name}</option>)}
          </select>
        </label>
        <label>Status
          <select value={query.status ?? ''} onChange={(e) => { setFilter('status', e.currentTarget.value) }}>
            <option value=''>Any</option>
            {RUN_STATUSES.map((status) => <option key={status} value={status}>{status}</option>)}
          </select>
        </label>
        <label>Kind
          <select value={query.test ?? ''} onChange={(e) => { setFilter('test', e.currentTarget.value) }}>
            <option value=''>Any</option>
            <option value='false'>Real runs</option>
            <option value='true'>Test runs (the builder's)</option>
          </select>
        </label>
        <label>Created
          <select value={query.period ?? ''} onChange={(e) => { setFilter('period', e.currentTarget.value) }}>
            <option value=''>Any time</option>
            {Object.entries(PERIODS).map(([key, { label }]) => <option key={key} value={key}>{label}</option>)}
          </select>
        </label>
      </form>
      {query.tag !== undefined && (
        <p class='label-chips'>Tagged <span class='tag'>{query.tag}<button type='button' aria-label={`Show runs with any tag, not only ${query.tag}`} onClick={() => { setFilter('tag', '') }}>×</button></span></p>
      )}
      <ErrorNotice error={runs.error} />
      {runs.data === undefined
        ? <Loading what='runs' />
        : runs.data.length === 0
          ? <p>No run matches.</p>
          : <RunList runs={runs.data} workflows={listed} />}
      {runs.data !== undefined && <Pager offset={offset} limit={PAGE} count={runs.data.length} onChange={(next) => { setFilter('offset', String(next)) }} />}
    </section>
  )
}
