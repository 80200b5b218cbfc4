import { Fragment } from 'preact'
import { api } from '../../api.ts'
import { LabelEditor } from '../../components/labels.tsx'
import { ErrorNotice, Loading } from '../../components/ui.tsx'
import { dateTime } from '../../format.ts'
import { useData } from '../../hooks.ts'
import { paths } from '../../paths.ts'
import type { Conversation } from '../../types.ts'
import { customerLabel, customerSearch, sameCustomer } from '../../customer.ts'

/**
 * The customer beside their conversation (README, Contacts and consent): the contact of the same
 * number and phone, with its consent, attributes and labels (added and removed here); the Contacts
 * page edits the rest.
 */
export function ContactPanel ({ accountId, conversation, knownLabels }: { accountId: string, conversation: Conversation, knownLabels: string[] }) {
  const contact = useData(async () => (await api.contacts(accountId, { search: customerSearch(conversation), limit: 10 })).find((candidate) => sameCustomer(candidate, conversation)) ?? null,
    [accountId, conversation.phone, conversation.platformUserId, conversation.optedOut])
  const found = contact.data
  return (
    <aside class='card contact-panel' aria-labelledby='contact-panel-title'>
      <h3 id='contact-panel-title'>Contact</h3>
      <ErrorNotice error={contact.error} />
      {found === undefined
        ? <Loading what='the contact' />
        : found === null
          ? <p class='muted small'>No contact for {customerLabel(conversation)} yet.</p>
          : (
            <>
              <dl>
                <dt>Name</dt><dd>{found.name ?? '—'}</dd>
                {found.phone !== '' ? <><dt>Phone</dt><dd class='mono'>+{found.phone}</dd></> : <><dt>Username</dt><dd class='mono'>{found.username ?? found.platformUserId}</dd></>}
                <dt>Consent</dt>
                <dd id='contact-consent'>{found.optedOut ? 'Opted out' : 'Subscribed'}{found.consentSource !== null && <span class='muted small'> ({found.consentSource}, {dateTime(found.consentChangedAt)})</span>}</dd>
                {Object.entries(found.attributes).map(([name, value]) => <Fragment key={name}><dt class='mono'>{name}</dt><dd>{value}</dd></Fragment>)}
              </dl>
              <LabelEditor
                of='contact' labels={found.labels} known={knownLabels}
                add={async (label) => { await api.addContactLabel(accountId, found.id, label); contact.reload() }}
                remove={async (label) => { await api.removeContactLabel(accountId, found.id, label); contact.reload() }}
              />
              <a class='small' href={`${paths.contacts}?${new URLSearchParams({ account: accountId, search: customerSearch(found) }).toString()}`}>Edit in Contacts</a>
            </>
            )}
    </aside>
  )
}
