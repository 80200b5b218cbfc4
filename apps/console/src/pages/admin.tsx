import { useState } from 'preact/hooks'
import { api, ApiError } from '../api.ts'
import { ErrorNotice, Loading, PageTitle } from '../components/ui.tsx'
import { dateTime } from '../format.ts'
import { useAction, useData } from '../hooks.ts'
import { loadSession } from '../session.ts'
import { paths } from '../paths.ts'
import type { ChatAccount, User } from '../types.ts'

/** One user: their role and a new password, set by an admin; an admin's own row links to their Account page. */
function UserRow ({ user, self, onChanged }: { user: User, self: boolean, onChanged: () => void }) {
  const [settingPassword, setSettingPassword] = useState(false)
  const [password, setPassword] = useState('')
  const [saved, setSaved] = useState('')
  const changeRole = useAction(async (role: string) => {
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
            <select aria-label={`Role of ${user.email}`} value={user.role} disabled={changeRole.busy} onChange={(e) => { changeRole.run(e.currentTarget.value) }}>
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
  const [role, setRole] = useState('member')
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
        <select id='user-role' value={role} onChange={(e) => { setRole(e.currentTarget.value) }}>
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
      <th scope='row'>{account.name}{account.isDefault && <span class='badge ok'>default</span>}</th>
      <td class='mono'>{account.phoneNumberId}</td>
      <td>{account.displayPhoneNumber ?? '—'}</td>
      <td>
        <div class='row'>
          <button type='button' disabled={verify.busy} onClick={() => { verify.run() }} aria-label={`Verify ${account.name}`}>{verify.busy ? 'Verifying…' : 'Verify'}</button>
          {!account.isDefault && <button type='button' disabled={makeDefault.busy} onClick={() => { makeDefault.run() }} aria-label={`Make ${account.name} the default for workflows`}>Make default</button>}
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
  const field = (key: 'name' | 'phoneNumberId' | 'businessAccountId' | 'displayPhoneNumber' | 'accessToken') =>
    (e: { currentTarget: HTMLInputElement }) => { setForm({ ...form, [key]: e.currentTarget.value }) }
  return (
    <section class='card' aria-labelledby='accounts-title'>
      <h2 id='accounts-title'>Chat accounts</h2>
      <p class='muted'>Linked chat platform numbers. Without any, the installation’s default account is used.</p>
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
    </section>
  )
}

export function Admin () {
  return (
    <section>
      <PageTitle>Admin</PageTitle>
      <div class='grid'>
        <Users />
        <Accounts />
      </div>
    </section>
  )
}
