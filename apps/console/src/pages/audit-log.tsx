import { useLocation } from 'preact-iso'
import { AUDIT_ACTIONS, AUDIT_TARGET_TYPES } from '@switchboard/core/db/values'
import { api, ApiError } from '../api.ts'
import { ErrorNotice, JsonBlock, Loading, PageTitle, Pager } from '../components/ui.tsx'
import { dateTime } from '../format.ts'
import { useAddressFilters, useData } from '../hooks.ts'
import { paths } from '../paths.ts'
import type { AuditEntry } from '../types.ts'

const PAGE = 50

/** A `datetime-local` input's value (the browser's time zone) as the api's ISO 8601, or nothing. */
const isoOf = (local: string | undefined): string | undefined => local === undefined || local === '' ? undefined : new Date(local).toISOString()

function Actor ({ actor }: { actor: AuditEntry['actor'] }) {
  const who = actor.label ?? actor.id ?? 'anonymous'
  return <>{who}{actor.apiKeyId !== null && <span class='badge'>API key</span>}</>
}

/**
 * The audit log (README, Audit log), for admins: who did what to what, newest first, filtered by
 * actor, action, target and time, the filters and the page in the address.
 */
export function AuditLog () {
  const { query } = useLocation()
  const offset = Number(query.offset ?? 0) || 0
  const users = useData(api.users, [])
  const entries = useData(async () => api.auditLog({
    actorId: query.actorId,
    action: query.action,
    targetType: query.targetType,
    targetId: query.targetId,
    from: isoOf(query.from),
    to: isoOf(query.to),
    limit: PAGE,
    offset
  }), [query.actorId, query.action, query.targetType, query.targetId, query.from, query.to, offset])

  const setFilter = useAddressFilters(paths.auditLog)

  if (entries.error instanceof ApiError && entries.error.status === 403) {
    return <section><PageTitle>Audit log</PageTitle><p>Only admins read the audit log.</p></section>
  }
  return (
    <section>
      <PageTitle actions={<a href={paths.admin}>Back to Admin</a>}>Audit log</PageTitle>
      <form class='filters' aria-label='Filter the audit log' onSubmit={(event) => { event.preventDefault() }}>
        <label>Who
          <select value={query.actorId ?? ''} onChange={(e) => { setFilter('actorId', e.currentTarget.value) }}>
            <option value=''>Anyone</option>
            {(users.data ?? []).map((user) => <option key={user.id} value={user.id}>{user.email}</option>)}
          </select>
        </label>
        <label>Action
          <select value={query.action ?? ''} onChange={(e) => { setFilter('action', e.currentTarget.value) }}>
            <option value=''>Any</option>
            {AUDIT_ACTIONS.map((action) => <option key={action} value={action}>{action}</option>)}
          </select>
        </label>
        <label>Target
          <select value={query.targetType ?? ''} onChange={(e) => { setFilter('targetType', e.currentTarget.value) }}>
            <option value=''>Any</option>
            {AUDIT_TARGET_TYPES.map((type) => <option key={type} value={type}>{type}</option>)}
          </select>
        </label>
        <label>Target id
          <input class='mono' maxLength={64} value={query.targetId ?? ''} onChange={(e) => { setFilter('targetId', e.currentTarget.value.trim()) }} />
        </label>
        <label>From
          <input type='datetime-local' value={query.from ?? ''} onChange={(e) => { setFilter('from', e.currentTarget.value) }} />
        </label>
        <label>To
          <input type='datetime-local' value={query.to ?? ''} onChange={(e) => { setFilter('to', e.currentTarget.value) }} />
        </label>
      </form>
      <ErrorNotice error={entries.error} />
      {entries.data === undefined
        ? <Loading what='the audit log' />
        : entries.data.length === 0
          ? <p>{Object.keys(query).some((name) => name !== 'offset') ? 'Nothing recorded matches these filters.' : 'Nothing recorded yet.'}</p>
          : (
            <div class='table-wrap'>
              <table id='audit-log'>
                <thead><tr><th scope='col'>When</th><th scope='col'>Who</th><th scope='col'>Action</th><th scope='col'>Target</th><th scope='col'>From</th><th scope='col'>Details</th></tr></thead>
                <tbody>
                  {entries.data.map((entry) => (
                    <tr key={entry.id} data-action={entry.action}>
                      <td>{dateTime(entry.at)}</td>
                      <td><Actor actor={entry.actor} /></td>
                      <td class='mono'>{entry.action}</td>
                      <td>{entry.target.type === null ? '—' : <>{entry.target.type} <span class='mono small'>{entry.target.id}</span></>}</td>
                      <td class='mono small'>{entry.clientAddress ?? '—'}</td>
                      <td>{entry.details === null ? '—' : <details><summary>Details</summary><JsonBlock value={entry.details} label={`Details of ${entry.action}`} /></details>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            )}
      {entries.data !== undefined && <Pager offset={offset} limit={PAGE} count={entries.data.length} onChange={(next) => { setFilter('offset', String(next)) }} />}
    </section>
  )
}
