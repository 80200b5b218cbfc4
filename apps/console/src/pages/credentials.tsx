import { useState } from 'preact/hooks'
import { api } from '../api.ts'
import { ErrorNotice, Loading, PageTitle } from '../components/ui.tsx'
import { dateTime } from '../format.ts'
import { useAction, useData } from '../hooks.ts'
import type { Credential, CredentialType } from '../types.ts'

/** A field of a type: whether it names rather than hides, whether it may be left empty, its hint. */
interface TypeField { name: string, secret: boolean, optional?: boolean, placeholder?: string }

/**
 * Each type's fields (README, Credentials) and whether a field names rather than hides: a header's
 * name, a basic credential's username and an MCP server's url show as typed, every other value is
 * typed unseen. A generic credential's fields are the user's own.
 */
const TYPE_FIELDS: Record<Exclude<CredentialType, 'generic'>, TypeField[]> = {
  bearer: [{ name: 'token', secret: true }],
  basic: [{ name: 'username', secret: false }, { name: 'password', secret: true }],
  header: [{ name: 'name', secret: false }, { name: 'value', secret: true }],
  hmac: [{ name: 'secret', secret: true }],
  mcp: [
    { name: 'url', secret: false, placeholder: 'https://mcp.example.com/mcp' },
    { name: 'headers', secret: true, optional: true, placeholder: '{"Authorization": "Bearer …"} (optional)' }
  ]
}

const TYPE_LABELS: Record<CredentialType, string> = {
  bearer: 'bearer: Authorization: Bearer <token>',
  basic: 'basic: a username and a password',
  header: 'header: a header of your own and its value',
  hmac: 'hmac: a secret that signs or checks a signature',
  mcp: 'mcp: an MCP server\'s url and the headers sent to it',
  generic: 'generic: fields of your own, for templates'
}

/** A field of a credential's data as the forms edit it. */
interface DataField { name: string, value: string, secret: boolean, optional?: boolean, placeholder?: string }

const fieldsOf = (type: CredentialType, names: string[] = []): DataField[] => type === 'generic'
  ? (names.length === 0 ? [''] : names).map((name) => ({ name, value: '', secret: true }))
  : TYPE_FIELDS[type].map((field) => ({ ...field, value: '' }))

/**
 * The inputs of a credential's data: one per field, the values never shown once saved (the api
 * never returns them); a generic credential's fields are named here, up to 20.
 */
function DataFields ({ type, fields, idPrefix, onChange }: { type: CredentialType, fields: DataField[], idPrefix: string, onChange: (fields: DataField[]) => void }) {
  const set = (index: number, change: Partial<DataField>): void => { onChange(fields.map((field, i) => i === index ? { ...field, ...change } : field)) }
  const valueProps = (field: DataField, index: number) => ({
    id: `${idPrefix}-${type === 'generic' ? index : field.name}`,
    'aria-label': type === 'generic' ? `Value of field ${index + 1}` : undefined,
    placeholder: type === 'generic' ? 'value' : field.placeholder,
    required: field.optional !== true,
    maxLength: 8192,
    value: field.value,
    onInput: (e: { currentTarget: HTMLInputElement }) => { set(index, { value: e.currentTarget.value }) }
  })
  return (
    <div class='data-fields'>
      {fields.map((field, index) => (
        <div class='row' key={index}>
          {type === 'generic'
            ? <input aria-label={`Name of field ${index + 1}`} required pattern='[A-Za-z0-9_\-]+' maxLength={100} placeholder='field name, e.g. apiKey' value={field.name} onInput={(e) => { set(index, { name: e.currentTarget.value }) }} />
            : <label for={`${idPrefix}-${field.name}`}>{field.name}</label>}
          {field.secret
            ? <input type='password' {...valueProps(field, index)} minLength={field.optional === true ? undefined : 8} autocomplete='new-password' />
            : <input type='text' {...valueProps(field, index)} autocomplete='off' />}
          {type === 'generic' && fields.length > 1 && <button type='button' aria-label={`Remove field ${index + 1}`} onClick={() => { onChange(fields.filter((_field, i) => i !== index)) }}>Remove</button>}
        </div>
      ))}
      {type === 'generic' && fields.length < 20 && <button type='button' onClick={() => { onChange([...fields, { name: '', value: '', secret: true }]) }}>Add a field</button>}
      <p class='small muted'>Secret values are at least 8 characters, so that runs can mask them wherever they appear. Once saved, no value is shown again.</p>
    </div>
  )
}

/** The data sent: an optional field left empty is left out. */
const dataOf = (fields: DataField[]): Record<string, string> =>
  Object.fromEntries(fields.filter((field) => field.optional !== true || field.value !== '').map((field) => [field.name, field.value]))

/** One credential: its fields named, never their values; new values for every field, or deleted. */
function CredentialRow ({ credential, onChanged }: { credential: Credential, onChanged: () => void }) {
  const [rotating, setRotating] = useState(false)
  const [fields, setFields] = useState<DataField[]>([])
  const [saved, setSaved] = useState('')
  const rotate = useAction(async () => {
    await api.updateCredential(credential.id, { data: dataOf(fields) })
    setRotating(false)
    setSaved('New values saved: the next runs use them')
    onChanged()
  })
  const remove = useAction(async () => {
    await api.deleteCredential(credential.id)
    onChanged()
  })
  const startRotating = (): void => {
    setSaved('')
    setFields(fieldsOf(credential.type, credential.fields))
    setRotating(!rotating)
  }
  return (
    <tr data-credential={credential.name}>
      <th scope='row' class='mono'>{credential.name}</th>
      <td>{credential.type}</td>
      <td class='mono'>{credential.fields.join(', ')}</td>
      <td>{dateTime(credential.updatedAt)}</td>
      <td>
        <div class='row'>
          <button type='button' aria-expanded={rotating} aria-label={`Replace the values of ${credential.name}`} onClick={startRotating}>Replace values</button>
          <button type='button' class='danger' disabled={remove.busy} aria-label={`Delete ${credential.name}`} onClick={() => { if (confirm(`Delete the credential ${credential.name}?`)) remove.run() }}>Delete</button>
        </div>
        {rotating && (
          <form onSubmit={(event) => { event.preventDefault(); rotate.run() }}>
            <DataFields type={credential.type} fields={fields} idPrefix={`rotate-${credential.id}`} onChange={setFields} />
            <button type='submit' class='primary' disabled={rotate.busy}>Save new values</button>
          </form>
        )}
        <div role='status' class='small'>{saved}</div>
        <ErrorNotice error={rotate.error ?? remove.error} />
      </td>
    </tr>
  )
}

/**
 * Credentials (README, Credentials): the secrets nodes use by name, made, given new values and
 * deleted here; their values are typed in and never shown again.
 */
export function Credentials () {
  const credentials = useData(api.credentials, [])
  const [name, setName] = useState('')
  const [type, setType] = useState<CredentialType>('bearer')
  const [fields, setFields] = useState<DataField[]>(fieldsOf('bearer'))
  const create = useAction(async () => {
    await api.createCredential({ name: name.trim(), type, data: dataOf(fields) })
    setName('')
    setFields(fieldsOf(type))
    credentials.reload()
  })
  return (
    <>
      <PageTitle>Credentials</PageTitle>
      <section class='card' aria-labelledby='credentials-title'>
        <h2 id='credentials-title'>Your credentials</h2>
        <p class='muted small'>A node names a credential in its <span class='mono'>credential</span> field; a generic one's fields read as <span class='mono'>{'{{credentials.<name>.<field>}}'}</span>.</p>
        <ErrorNotice error={credentials.error} />
        {credentials.data === undefined
          ? <Loading what='credentials' />
          : credentials.data.length === 0
            ? <p>No credential yet: add one below.</p>
            : (
              <div class='table-wrap'>
                <table id='credentials'>
                  <thead><tr><th scope='col'>Name</th><th scope='col'>Type</th><th scope='col'>Fields</th><th scope='col'>Changed</th><th scope='col'><span class='visually-hidden'>Actions</span></th></tr></thead>
                  <tbody>
                    {credentials.data.map((credential) => <CredentialRow key={credential.id} credential={credential} onChanged={() => { credentials.reload() }} />)}
                  </tbody>
                </table>
              </div>
              )}
        <form class='inline-form' onSubmit={(event) => { event.preventDefault(); create.run() }}>
          <h3>Add a credential</h3>
          <label for='credential-name'>Name (letters, digits, _ and -)</label>
          <input id='credential-name' required pattern='[A-Za-z0-9_\-]+' maxLength={200} placeholder='e.g. billing_api' value={name} onInput={(e) => { setName(e.currentTarget.value) }} />
          <label for='credential-type'>Type</label>
          <select id='credential-type' value={type} onChange={(e) => { const next = e.currentTarget.value as CredentialType; setType(next); setFields(fieldsOf(next)) }}>
            {(Object.keys(TYPE_LABELS) as CredentialType[]).map((value) => <option key={value} value={value}>{TYPE_LABELS[value]}</option>)}
          </select>
          <DataFields type={type} fields={fields} idPrefix='new-credential' onChange={setFields} />
          <ErrorNotice error={create.error} />
          <button type='submit' class='primary' disabled={create.busy}>Add credential</button>
        </form>
      </section>
    </>
  )
}
