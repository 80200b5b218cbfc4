import { useLocation } from 'preact-iso'
import { DOMAINS } from '@switchboard/core/db/values'
import { api } from '../api.ts'
import { ErrorNotice, Loading, PageTitle, Pager } from '../components/ui.tsx'
import { ago } from '../format.ts'
import { useAction, useAddressFilters, useData } from '../hooks.ts'
import { paths } from '../paths.ts'
import { TRIGGER_TYPE_CHOICES } from '../types.ts'

const PAGE = 50

/** Why the list is empty: nothing created yet, filters that match nothing, or a page past the end. */
function EmptyList ({ filtered, offset }: { filtered: boolean, offset: number }) {
  if (filtered) return <p>No workflow matches these filters. <a href={paths.workflows}>Clear the filters</a>.</p>
  if (offset > 0) return <p>No more workflows.</p>
  return (
    <div class='card empty-state'>
      <h2>No workflows yet</h2>
      <p>A workflow runs its nodes when its trigger fires: a webhook, a schedule, an event, a chat keyword, or by hand.</p>
      <p><a class='button primary' href={paths.newWorkflow}>Create your first workflow</a></p>
    </div>
  )
}

/** The workflow list with the API's filters (README, Workflows), kept in the address so that back and reload keep them. */
export function Workflows () {
  const { query, route } = useLocation()
  const offset = Number(query.offset ?? 0) || 0
  const filter = { domain: query.domain, triggerType: query.triggerType, isActive: query.isActive, tag: query.tag }
  const filtered = Object.values(filter).some((value) => value !== undefined && value !== '')
  const list = useData(async () => api.workflows({ ...filter, limit: PAGE, offset }), [query.domain, query.triggerType, query.isActive, query.tag, offset])

  // A workflow to draw: manual and inactive until its author says otherwise.
  const build = useAction(async () => {
    const created = await api.createWorkflow({ name: 'Untitled workflow', description: null, triggerType: 'MANUAL', triggerConfig: {}, domain: 'GENERAL', tags: [], isActive: false, nodes: [], edges: null })
    route(paths.builder(created.id))
  })

  const setFilter = useAddressFilters(paths.workflows)

  return (
    <section>
      <PageTitle actions={
        <>
          <button type='button' class='primary' disabled={build.busy} onClick={() => { build.run() }}>New in the builder</button>
          <a class='button' href={paths.newWorkflow}>New workflow</a>
        </>
      }
      >Workflows
      </PageTitle>
      <ErrorNotice error={build.error} />
      <form class='filters' aria-label='Filter workflows' onSubmit={(event) => { event.preventDefault() }}>
        <label>Domain
          <select value={filter.domain ?? ''} onChange={(e) => { setFilter('domain', e.currentTarget.value) }}>
            <option value=''>Any</option>
            {DOMAINS.map((domain) => <option key={domain} value={domain}>{domain}</option>)}
          </select>
        </label>
        <label>Trigger
          <select value={filter.triggerType ?? ''} onChange={(e) => { setFilter('triggerType', e.currentTarget.value) }}>
            <option value=''>Any</option>
            {TRIGGER_TYPE_CHOICES.map((type) => <option key={type} value={type}>{type}</option>)}
          </select>
        </label>
        <label>State
          <select value={filter.isActive ?? ''} onChange={(e) => { setFilter('isActive', e.currentTarget.value) }}>
            <option value=''>Any</option>
            <option value='true'>Active</option>
            <option value='false'>Inactive</option>
          </select>
        </label>
        <label>Tag
          <input type='search' value={filter.tag ?? ''} maxLength={50} placeholder='one tag' onChange={(e) => { setFilter('tag', e.currentTarget.value.trim()) }} />
        </label>
      </form>
      <ErrorNotice error={list.error} />
      {list.data === undefined
        ? <Loading what='workflows' />
        : list.data.length === 0
          ? <EmptyList filtered={filtered} offset={offset} />
          : (
            <div class='table-wrap'>
              <table>
                <thead>
                  <tr>
                    <th scope='col'>Name</th><th scope='col'>Trigger</th><th scope='col'>Domain</th><th scope='col'>Tags</th><th scope='col'>State</th>
                    <th scope='col' class='num'>Runs</th><th scope='col' class='num'>Succeeded</th><th scope='col' class='num'>Failed</th><th scope='col'>Last run</th>
                  </tr>
                </thead>
                <tbody>
                  {list.data.map((workflow) => (
                    <tr key={workflow.id}>
                      <th scope='row'><a href={paths.workflow(workflow.id)}>{workflow.name}</a>{workflow.description !== null && <div class='muted small'>{workflow.description}</div>}</th>
                      <td>{workflow.triggerType}</td>
                      <td>{workflow.domain}</td>
                      <td>{workflow.tags.map((tag) => <span key={tag} class='tag'>{tag}</span>)}</td>
                      <td>{workflow.isActive ? <span class='badge ok'>Active</span> : <span class='badge off'>Inactive</span>}</td>
                      <td class='num'>{workflow.runCount}</td>
                      <td class='num'>{workflow.successCount}</td>
                      <td class='num'>{workflow.failureCount}</td>
                      <td>{ago(workflow.lastRunAt)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            )}
      {list.data !== undefined && <Pager offset={offset} limit={PAGE} count={list.data.length} onChange={(next) => { setFilter('offset', String(next)) }} />}
    </section>
  )
}
