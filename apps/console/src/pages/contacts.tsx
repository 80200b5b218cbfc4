import { useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { api } from '../api.ts'
import { AccountSwitcher } from '../components/account-switcher.tsx'
import { ErrorNotice, Loading, PageTitle, Pager } from '../components/ui.tsx'
import { dateTime } from '../format.ts'
import { useAction, useAddressFilters, useChatAccount, useData } from '../hooks.ts'
import { paths } from '../paths.ts'
import { chooseAccount } from '../session.ts'
import type { Contact, ContactsImported } from '../types.ts'
import { attributesOf, attributesText, labelsOf } from '../contact-form.ts'

const PAGE = 50

function ContactEditor ({ accountId, contact, onSaved }: { accountId: string, contact: Contact, onSaved: () => void }) {
  const [name, setName] = useState(contact.name ?? '')
  const [labels, setLabels] = useState(contact.labels.join(', '))
  const [attributes, setAttributes] = useState(attributesText(contact.attributes))
  const [optedOut, setOptedOut] = useState(contact.optedOut)
  const save = useAction(async () => {
    await api.updateContact(accountId, contact.id, {
      name: name.trim() === '' ? null : name.trim(),
      labels: labelsOf(labels),
      attributes: attributesOf(attributes),
      ...(optedOut !== contact.optedOut && { optedOut })
    })
    onSaved()
  })
  const id = `contact-${contact.id}`
  return (
    <form class='contact-editor' aria-label={`Edit ${contact.phone}`} onSubmit={(event) => { event.preventDefault(); save.run() }}>
      <label for={`${id}-name`}>Name</label>
      <input id={`${id}-name`} maxLength={200} value={name} onInput={(e) => { setName(e.currentTarget.value) }} />
      <label for={`${id}-labels`}>Labels (separated by commas)</label>
      <input id={`${id}-labels`} value={labels} placeholder='e.g. vip, newsletter' onInput={(e) => { setLabels(e.currentTarget.value) }} />
      <label for={`${id}-attributes`}>Attributes (one <span class='mono'>name = value</span> a line; broadcasts and workflows read them)</label>
      <textarea id={`${id}-attributes`} rows={3} class='mono' placeholder='e.g. plan = gold' value={attributes} onInput={(e) => { setAttributes(e.currentTarget.value) }} />
      <label class='check'>
        <input type='checkbox' checked={optedOut} onChange={(e) => { setOptedOut(e.currentTarget.checked) }} /> Opted out: no broadcast reaches them
      </label>
      <ErrorNotice error={save.error} />
      <button type='submit' class='primary' disabled={save.busy}>Save contact</button>
    </form>
  )
}

function ContactRow ({ accountId, contact, onChanged }: { accountId: string, contact: Contact, onChanged: () => void }) {
  const [editing, setEditing] = useState(false)
  return (
    <tr data-contact={contact.phone}>
      <th scope='row' class='mono'>{contact.phone !== '' ? contact.phone : contact.username ?? contact.platformUserId}</th>
      <td>{contact.name ?? <span class='muted'>—</span>}</td>
      <td>{contact.labels.length === 0 ? <span class='muted'>—</span> : contact.labels.map((label) => <span key={label} class='tag'>{label}</span>)}</td>
      <td>
        {contact.optedOut ? <span class='badge status-failed'>opted out</span> : <span class='muted'>subscribed</span>}
        {contact.consentSource !== null && <div class='small muted'>{contact.consentSource}, {dateTime(contact.consentChangedAt)}</div>}
      </td>
      <td>
        <button type='button' aria-expanded={editing} aria-label={`Edit ${contact.phone}`} onClick={() => { setEditing(!editing) }}>Edit</button>
        {editing && <ContactEditor accountId={accountId} contact={contact} onSaved={() => { setEditing(false); onChanged() }} />}
      </td>
    </tr>
  )
}

function ImportForm ({ accountId, onImported }: { accountId: string, onImported: () => void }) {
  const [file, setFile] = useState<File | undefined>(undefined)
  const [result, setResult] = useState<ContactsImported | undefined>(undefined)
  const run = useAction(async () => {
    if (file === undefined) throw new Error('Choose a CSV file')
    setResult(undefined)
    setResult(await api.importContacts(accountId, file))
    onImported()
  })
  return (
    <form class='inline-form' onSubmit={(event) => { event.preventDefault(); run.run() }}>
      <h3>Import contacts</h3>
      <p class='small muted'>A CSV file of up to 10 MiB whose first line names the columns: <span class='mono'>phone</span> (required), <span class='mono'>name</span>, <span class='mono'>labels</span> (separated by <span class='mono'>;</span>), <span class='mono'>optedOut</span> and <span class='mono'>attr.&lt;name&gt;</span>. A contact already there is updated; an import never ends an opt-out.</p>
      <label for='contacts-file'>CSV file</label>
      <input id='contacts-file' type='file' accept='.csv,text/csv' required onChange={(e) => { setFile(e.currentTarget.files?.[0]) }} />
      <ErrorNotice error={run.error} />
      <button type='submit' class='primary' disabled={run.busy}>{run.busy ? 'Importing…' : 'Import'}</button>
      {result !== undefined && (
        <div role='status' id='import-result'>
          <p>{result.imported} added, {result.updated} updated, {result.skippedCount} skipped{result.ignoredColumns.length > 0 && `; columns ignored: ${result.ignoredColumns.join(', ')}`}.</p>
          {result.skipped.length > 0 && <ul class='small'>{result.skipped.map((row) => <li key={row.line}>Line {row.line}: {row.reason}</li>)}</ul>}
        </div>
      )}
    </form>
  )
}

/**
 * A chat number's contacts (README, Contacts and consent): found by phone or name, by label or
 * consent, edited (name, labels, attributes, opt-out) and imported from a CSV file.
 */
export function Contacts () {
  const { query } = useLocation()
  const offset = Number(query.offset ?? 0) || 0
  const { accounts, choices, accountId } = useChatAccount(query.account)
  const contacts = useData(async () => accountId === undefined
    ? undefined
    : await api.contacts(accountId, { search: query.search, label: query.label, optedOut: query.optedOut, limit: PAGE, offset }),
  [accountId, query.search, query.label, query.optedOut, offset])

  const setFilter = useAddressFilters(paths.contacts)
  const filtered = query.search !== undefined || query.label !== undefined || query.optedOut !== undefined

  return (
    <section>
      <PageTitle actions={<AccountSwitcher choices={choices} value={accountId ?? ''} onChange={(id) => { chooseAccount(id); setFilter('account', id) }} />}>Contacts</PageTitle>
      <form class='filters' aria-label='Find contacts' onSubmit={(event) => { event.preventDefault() }}>
        <label>Phone or name
          <input type='search' maxLength={100} placeholder='Starts with…' value={query.search ?? ''} onChange={(e) => { setFilter('search', e.currentTarget.value.trim()) }} />
        </label>
        <label>Label
          <input type='search' maxLength={50} placeholder='Any' value={query.label ?? ''} onChange={(e) => { setFilter('label', e.currentTarget.value.trim()) }} />
        </label>
        <label>Consent
          <select value={query.optedOut ?? ''} onChange={(e) => { setFilter('optedOut', e.currentTarget.value) }}>
            <option value=''>Any</option>
            <option value='false'>Subscribed</option>
            <option value='true'>Opted out</option>
          </select>
        </label>
      </form>
      <ErrorNotice error={accounts.error ?? contacts.error} />
      {contacts.data === undefined
        ? <Loading what='contacts' />
        : contacts.data.length === 0
          ? <p id='no-contacts'>{filtered ? 'No contact matches these filters.' : 'No contact yet: a customer becomes one with their first message, or import a file below.'}</p>
          : (
            <div class='table-wrap'>
              <table id='contacts'>
                <thead><tr><th scope='col'>Phone</th><th scope='col'>Name</th><th scope='col'>Labels</th><th scope='col'>Consent</th><th scope='col'><span class='visually-hidden'>Actions</span></th></tr></thead>
                <tbody>
                  {contacts.data.map((contact) => <ContactRow key={contact.id} accountId={accountId!} contact={contact} onChanged={() => { contacts.reload() }} />)}
                </tbody>
              </table>
            </div>
            )}
      {contacts.data !== undefined && <Pager offset={offset} limit={PAGE} count={contacts.data.length} onChange={(next) => { setFilter('offset', String(next)) }} />}
      {accountId !== undefined && <ImportForm accountId={accountId} onImported={() => { contacts.reload() }} />}
    </section>
  )
}
