import { useState } from 'preact/hooks'
import { api, ApiError } from '../api.ts'
import { ErrorNotice, Loading, PageTitle } from '../components/ui.tsx'
import { dateTime } from '../format.ts'
import { useAction, useData } from '../hooks.ts'
import { loadSession } from '../session.ts'
import { paths } from '../paths.ts'
import type { ApiKey, ApiKeyScope, ChatAccount, User, UserRole } from '../types.ts'

/** One user: their role and a new password, set by an admin; an admin's own row links to their Account page. */
function UserRow ({ user, self, onChanged }: { user: User, self: boolean, onChanged: () => void }) {
  const [settingPassword, setSettingPassword] = useState(false)
  const [password, setPassword] = useState('')
  const [saved, setSaved] = useState('')
  const changeRole = useAction(async (role: UserRole) => {
    setSaved('')
    await api.updateUser(user.id, { role })
    setSaved(`Now ${role === 'admin' ? 'an admin' : 'a member'}`)
    onChanged()
  })
  const setNewPassword = useAction(async () => {
    setSaved('')
    await api.updateUser(user.id, { password })
    setPassword('')
    setSettingPassword(false)
    setSaved('Password set: their sessions were signed out')
  })
  const remove = useAction(async () => {
    await api.deleteUser(user.id)
    onChanged()
  })
  const error = changeRole.error ?? setNewPassword.error ?? remove.error
  return (
    <tr data-user={user.email}>
      <th scope='row'>{user.email}</th>
      <td>
        {self
          ? user.role
          : (
            <select aria-label={`Role of ${user.email}`} value={user.role} disabled={changeRole.busy} onChange={(e) => { changeRole.run(e.currentTarget.value as UserRole) }}>
              <option value='member'>member</option>
              <option value='admin'>admin</option>
            </select>
            )}
      </td>
      <td>{dateTime(user.createdAt)}</td>
      <td>
        {self
          ? <a href={paths.account}>Change my password</a>
          : (
            <div class='row'>
              <button type='button' aria-expanded={settingPassword} aria-label={`Set a password for ${user.email}`} onClick={() => { setSettingPassword(!settingPassword) }}>Set password</button>
              <button type='button' class='danger' disabled={remove.busy} aria-label={`Delete ${user.email}`} onClick={() => { if (confirm(`Delete ${user.email}, with their workflows, runs and chat accounts?`)) remove.run() }}>Delete</button>
            </div>
            )}
        {settingPassword && (
          <form class='row' onSubmit={(event) => { event.preventDefault(); setNewPassword.run() }}>
            <input type='password' autocomplete='new-password' required minLength={8} maxLength={1024} aria-label={`New password for ${user.email} (at least 8 characters)`} value={password} onInput={(e) => { setPassword(e.currentTarget.value) }} />
            <button type='submit' class='primary' disabled={setNewPassword.busy}>Save password</button>
          </form>
        )}
        <div role='status' class='small'>{saved}</div>
        {error !== undefined && <p class='notice error' role='alert'>{error.message}</p>}
      </td>
    </tr>
  )
}

function Users () {
  const users = useData(api.users, [])
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [role, setRole] = useState<UserRole>('member')
  const create = useAction(async () => {
    await api.createUser({ email: email.trim(), password, role })
    setEmail('')
    setPassword('')
    users.reload()
  })
  const me = loadSession()?.user.id
  if (users.error instanceof ApiError && users.error.status === 403) {
    return <section class='card' aria-labelledby='users-title'><h2 id='users-title'>Users</h2><p>Only admins manage users.</p></section>
  }
  return (
    <section class='card' aria-labelledby='users-title'>
      <h2 id='users-title'>Users</h2>
      <ErrorNotice error={users.error} />
      {users.data === undefined
        ? <Loading what='users' />
        : (
          <div class='table-wrap'>
            <table id='users'>
              <thead><tr><th scope='col'>Email</th><th scope='col'>Role</th><th scope='col'>Created</th><th scope='col'><span class='visually-hidden'>Actions</span></th></tr></thead>
              <tbody>
                {users.data.map((user) => <UserRow key={user.id} user={user} self={user.id === me} onChanged={() => { users.reload() }} />)}
              </tbody>
            </table>
          </div>
          )}
      <form class='inline-form' onSubmit={(event) => { event.preventDefault(); create.run() }}>
        <h3>Add a user</h3>
        <label for='user-email'>Email</label>
        <input id='user-email' type='email' required maxLength={320} value={email} onInput={(e) => { setEmail(e.currentTarget.value) }} />
        <label for='user-password'>Password (at least 8 characters)</label>
        <input id='user-password' type='password' autocomplete='new-password' required minLength={8} maxLength={1024} value={password} onInput={(e) => { setPassword(e.currentTarget.value) }} />
        <label for='user-role'>Role</label>
        <select id='user-role' value={role} onChange={(e) => { setRole(e.currentTarget.value as UserRole) }}>
          <option value='member'>member: their own workflows, runs and chat accounts</option>
          <option value='admin'>admin: everything, and users</option>
        </select>
        <ErrorNotice error={create.error} />
        <button type='submit' class='primary' disabled={create.busy}>Add user</button>
      </form>
    </section>
  )
}

function AccountRow ({ account, onChanged }: { account: ChatAccount, onChanged: () => void }) {
  const [verified, setVerified] = useState<string | undefined>(undefined)
  const verify = useAction(async () => {
    setVerified(undefined)
    await api.verifyAccount(account)
    setVerified('Verified: the platform accepts this number with its token')
  })
  const makeDefault = useAction(async () => {
    await api.updateAccount(account.id, { isDefault: true })
    onChanged()
  })
  const remove = useAction(async () => {
    await api.deleteAccount(account.id)
    onChanged()
  })
  const error = verify.error ?? makeDefault.error ?? remove.error
  return (
    <tr data-account={account.phoneNumberId}>
      <th scope='row'>{account.name}{account.isDefault && <span class='badge ok'>default</span>}{account.sandbox && <span class='badge'>sandbox</span>}</th>
      <td class='mono'>{account.phoneNumberId}</td>
      <td>{account.displayPhoneNumber ?? '—'}</td>
      <td>
        <div class='row'>
          {!account.sandbox && <button type='button' disabled={verify.busy} onClick={() => { verify.run() }} aria-label={`Verify ${account.name}`}>{verify.busy ? 'Verifying…' : 'Verify'}</button>}
          {!account.isDefault && !account.sandbox && <button type='button' disabled={makeDefault.busy} onClick={() => { makeDefault.run() }} aria-label={`Make ${account.name} the default for workflows`}>Make default</button>}
          <button type='button' class='danger' disabled={remove.busy} aria-label={`Delete ${account.name}`} onClick={() => { if (confirm(`Unlink ${account.name}?`)) remove.run() }}>Delete</button>
        </div>
        <div role='status' class='small'>{verified}</div>
        {error !== undefined && <p class='notice error' role='alert'>{error.message}</p>}
      </td>
    </tr>
  )
}

function Accounts () {
  const accounts = useData(api.accounts, [])
  const [form, setForm] = useState({ name: '', phoneNumberId: '', businessAccountId: '', displayPhoneNumber: '', accessToken: '', isDefault: false })
  const link = useAction(async () => {
    await api.linkAccount({
      name: form.name.trim(),
      phoneNumberId: form.phoneNumberId.trim(),
      accessToken: form.accessToken,
      ...(form.businessAccountId.trim() !== '' && { businessAccountId: form.businessAccountId.trim() }),
      ...(form.displayPhoneNumber.trim() !== '' && { displayPhoneNumber: form.displayPhoneNumber.trim() }),
      isDefault: form.isDefault
    })
    setForm({ name: '', phoneNumberId: '', businessAccountId: '', displayPhoneNumber: '', accessToken: '', isDefault: false })
    accounts.reload()
  })
  const [sandboxName, setSandboxName] = useState('Sandbox')
  const createSandbox = useAction(async () => {
    await api.createSandbox(sandboxName.trim())
    accounts.reload()
  })
  const field = (key: 'name' | 'phoneNumberId' | 'businessAccountId' | 'displayPhoneNumber' | 'accessToken') =>
    (e: { currentTarget: HTMLInputElement }) => { setForm({ ...form, [key]: e.currentTarget.value }) }
  return (
    <section class='card' aria-labelledby='accounts-title'>
      <h2 id='accounts-title'>Chat accounts</h2>
      <p class='muted'>Linked chat platform numbers. Without any, the installation’s default account is used. Sandbox numbers have no platform behind them: used only where they are named, never by default.</p>
      <ErrorNotice error={accounts.error} />
      {accounts.data === undefined
        ? <Loading what='chat accounts' />
        : accounts.data.length === 0
          ? <p>No account linked.</p>
          : (
            <div class='table-wrap'>
              <table id='accounts'>
                <thead><tr><th scope='col'>Name</th><th scope='col'>Phone number id</th><th scope='col'>Number</th><th scope='col'><span class='visually-hidden'>Actions</span></th></tr></thead>
                <tbody>{accounts.data.map((account) => <AccountRow key={account.id} account={account} onChanged={() => { accounts.reload() }} />)}</tbody>
              </table>
            </div>
            )}
      <form class='inline-form' onSubmit={(event) => { event.preventDefault(); link.run() }}>
        <h3>Link an account</h3>
        <p class='muted'>The platform is asked whether the token may use the number before it is linked.</p>
        <label for='account-name'>Name</label>
        <input id='account-name' required maxLength={200} value={form.name} onInput={field('name')} />
        <label for='account-phone-id'>Phone number id (digits)</label>
        <input id='account-phone-id' required inputMode='numeric' pattern='[0-9]{1,64}' value={form.phoneNumberId} onInput={field('phoneNumberId')} />
        <label for='account-business-id'>Business account id (digits; needed for templates)</label>
        <input id='account-business-id' inputMode='numeric' pattern='[0-9]{1,64}' value={form.businessAccountId} onInput={field('businessAccountId')} />
        <label for='account-display'>Display number</label>
        <input id='account-display' maxLength={32} value={form.displayPhoneNumber} onInput={field('displayPhoneNumber')} />
        <label for='account-token'>Access token (stored encrypted, never shown again)</label>
        <input id='account-token' type='password' autocomplete='off' required maxLength={4096} value={form.accessToken} onInput={field('accessToken')} />
        <label class='check'><input type='checkbox' checked={form.isDefault} onChange={(e) => { setForm({ ...form, isDefault: e.currentTarget.checked }) }} /> Default for my workflows</label>
        <ErrorNotice error={link.error} />
        <button type='submit' class='primary' disabled={link.busy}>{link.busy ? 'Linking…' : 'Link account'}</button>
      </form>
      <form class='inline-form' onSubmit={(event) => { event.preventDefault(); createSandbox.run() }}>
        <h3>Create sandbox number</h3>
        <p class='muted'>A number to try workflows and the assistant on: you type as the customer (the builder's “Try it in chat”), and what it sends is delivered at once, without the platform.</p>
        <label for='sandbox-name'>Sandbox number name</label>
        <input id='sandbox-name' required maxLength={200} value={sandboxName} onInput={(e) => { setSandboxName(e.currentTarget.value) }} />
        <ErrorNotice error={createSandbox.error} />
        <button type='submit' disabled={createSandbox.busy}>{createSandbox.busy ? 'Creating…' : 'Create sandbox number'}</button>
      </form>
    </section>
  )
}

/** The scopes a key may hold (README, API keys); the last two only an admin's. */
const SCOPES: Array<[ApiKeyScope, string]> = [
  ['workflows:read', 'read workflows'], ['workflows:write', 'change workflows'], ['runs:read', 'read runs'],
  ['runs:write', 'fire, cancel, retry and resume runs'], ['events:write', 'send events'], ['queues:read', 'read queue counters'],
  ['credentials:read', 'list credentials (names and types)'], ['credentials:write', 'change credentials'], ['chat:read', 'read chat'],
  ['chat:write', 'send, drafts, broadcasts, contacts'], ['subscriptions:write', 'manage event subscriptions'],
  ['mcp', 'call AGENT workflows as MCP tools (/mcp)'],
  ['audit:read', 'read the audit log (admins)'], ['users:admin', 'manage users (admins)']
]
const ADMIN_SCOPES = new Set<ApiKeyScope>(['audit:read', 'users:admin'])

function keyState (key: ApiKey): string {
  if (key.revokedAt !== null) return `revoked ${dateTime(key.revokedAt)}`
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= Date.now()) return `expired ${dateTime(key.expiresAt)}`
  return key.expiresAt === null ? 'active' : `active until ${dateTime(key.expiresAt)}`
}

function ApiKeyRow ({ apiKey, onChanged }: { apiKey: ApiKey, onChanged: () => void }) {
  const revoke = useAction(async () => {
    await api.revokeApiKey(apiKey.id)
    onChanged()
  })
  return (
    <tr data-api-key={apiKey.name}>
      <th scope='row'>{apiKey.name}<div class='mono small'>{apiKey.hint}…</div></th>
      <td class='small'>{apiKey.scopes.join(', ')}{apiKey.workflowIds !== null && <div class='muted'>workflows: {apiKey.workflowIds.join(', ')}</div>}</td>
      <td>{apiKey.lastUsedAt === null ? 'never' : dateTime(apiKey.lastUsedAt)}</td>
      <td>{keyState(apiKey)}</td>
      <td>
        {apiKey.revokedAt === null && (
          <button type='button' class='danger' disabled={revoke.busy} aria-label={`Revoke ${apiKey.name}`} onClick={() => { if (confirm(`Revoke ${apiKey.name}? Clients using it are refused within seconds.`)) revoke.run() }}>Revoke</button>
        )}
        {revoke.error !== undefined && <p class='notice error' role='alert'>{revoke.error.message}</p>}
      </td>
    </tr>
  )
}

/** The signed-in user's API keys (an admin's list holds everyone's): made here, shown once, revoked here. */
function ApiKeys () {
  const keys = useData(api.apiKeys, [])
  const admin = loadSession()?.user.role === 'admin'
  const [name, setName] = useState('')
  const [scopes, setScopes] = useState<ApiKeyScope[]>([])
  const [workflowIds, setWorkflowIds] = useState('')
  const [expiresOn, setExpiresOn] = useState('')
  const [secret, setSecret] = useState<{ name: string, key: string } | undefined>(undefined)
  const create = useAction(async () => {
    const ids = workflowIds.split(/[\s,]+/).filter((id) => id !== '')
    const created = await api.createApiKey({
      name: name.trim(),
      scopes,
      ...(ids.length > 0 && { workflowIds: ids }),
      ...(expiresOn !== '' && { expiresAt: new Date(`${expiresOn}T23:59:59`).toISOString() })
    })
    setSecret({ name: created.name, key: created.key })
    setName('')
    setScopes([])
    setWorkflowIds('')
    setExpiresOn('')
    keys.reload()
  })
  const toggle = (scope: ApiKeyScope, on: boolean) => { setScopes(on ? [...scopes, scope] : scopes.filter((s) => s !== scope)) }
  return (
    <section class='card' aria-labelledby='api-keys-title'>
      <h2 id='api-keys-title'>API keys</h2>
      <p class='muted'>For machines: a key acts as its owner, within its scopes. Send it as <code>Authorization: Bearer sbk_…</code>.</p>
      <ErrorNotice error={keys.error} />
      {secret !== undefined && (
        <div class='notice' role='status'>
          <p>The key <strong>{secret.name}</strong>, shown this once: copy it now.</p>
          <output class='mono' aria-label='New API key'>{secret.key}</output>
          <div class='row'>
            <button type='button' onClick={() => { navigator.clipboard?.writeText(secret.key).catch(() => { /* no clipboard here: the key stays shown, to copy by hand */ }) }}>Copy</button>
            <button type='button' onClick={() => { setSecret(undefined) }}>Done</button>
          </div>
        </div>
      )}
      {keys.data === undefined
        ? <Loading what='API keys' />
        : keys.data.length === 0
          ? <p>No API key yet.</p>
          : (
            <div class='table-wrap'>
              <table id='api-keys'>
                <thead><tr><th scope='col'>Name</th><th scope='col'>Scopes</th><th scope='col'>Last used</th><th scope='col'>State</th><th scope='col'><span class='visually-hidden'>Actions</span></th></tr></thead>
                <tbody>{keys.data.map((key) => <ApiKeyRow key={key.id} apiKey={key} onChanged={() => { keys.reload() }} />)}</tbody>
              </table>
            </div>
            )}
      <form class='inline-form' onSubmit={(event) => { event.preventDefault(); create.run() }}>
        <h3>Create a key</h3>
        <label for='api-key-name'>Key name</label>
        <input id='api-key-name' required maxLength={100} value={name} onInput={(e) => { setName(e.currentTarget.value) }} />
        <fieldset>
          <legend>Scopes</legend>
          {SCOPES.filter(([scope]) => admin || !ADMIN_SCOPES.has(scope)).map(([scope, what]) => (
            <label key={scope} class='check'>
              <input type='checkbox' checked={scopes.includes(scope)} onChange={(e) => { toggle(scope, e.currentTarget.checked) }} /> <code>{scope}</code> {what}
            </label>
          ))}
        </fieldset>
        <label for='api-key-workflows'>Only these workflow ids (optional, separated by commas)</label>
        <input id='api-key-workflows' value={workflowIds} onInput={(e) => { setWorkflowIds(e.currentTarget.value) }} />
        <label for='api-key-expires'>Expires at the end of (optional)</label>
        <input id='api-key-expires' type='date' value={expiresOn} onInput={(e) => { setExpiresOn(e.currentTarget.value) }} />
        <ErrorNotice error={create.error} />
        <button type='submit' class='primary' disabled={create.busy || scopes.length === 0}>Create key</button>
      </form>
    </section>
  )
}

export function Admin () {
  const admin = loadSession()?.user.role === 'admin'
  return (
    <section>
      <PageTitle actions={admin ? <a href={paths.auditLog}>Audit log</a> : undefined}>Admin</PageTitle>
      <div class='grid'>
        <Users />
        <ApiKeys />
        <Accounts />
      </div>
    </section>
  )
}
