import { useState } from 'preact/hooks'
import { api } from '../api.ts'
import { ErrorNotice, PageTitle } from '../components/ui.tsx'
import { useAction } from '../hooks.ts'
import { saveSession, type Session } from '../session.ts'

/** The signed-in user's own account: who they are, and their password (README, Authentication). */
export function Account ({ session, onSessionChange }: { session?: Session, onSessionChange?: (session: Session) => void }) {
  const [current, setCurrent] = useState('')
  const [next, setNext] = useState('')
  const [confirmation, setConfirmation] = useState('')
  const [done, setDone] = useState(false)
  const change = useAction(async () => {
    setDone(false)
    if (next !== confirmation) throw new Error('The new password and its confirmation differ')
    // The change ends the token of this session too: the answer's token replaces it.
    const { token, user } = await api.changePassword(current, next)
    onSessionChange?.(saveSession(token, user))
    setCurrent('')
    setNext('')
    setConfirmation('')
    setDone(true)
  })
  return (
    <section>
      <PageTitle>Account</PageTitle>
      <div class='grid'>
        <section class='card' aria-labelledby='password-title'>
          <h2 id='password-title'>Change password</h2>
          {session !== undefined && <p>Signed in as <strong>{session.user.email}</strong> ({session.user.role}).</p>}
          <p class='muted'>Changing it signs out every other session of this account; this one stays signed in.</p>
          <form class='inline-form' onSubmit={(event) => { event.preventDefault(); change.run() }}>
            <label for='current-password'>Current password</label>
            <input id='current-password' type='password' autocomplete='current-password' required maxLength={1024} value={current} onInput={(e) => { setCurrent(e.currentTarget.value) }} />
            <label for='new-password'>New password (at least 8 characters)</label>
            <input id='new-password' type='password' autocomplete='new-password' required minLength={8} maxLength={1024} value={next} onInput={(e) => { setNext(e.currentTarget.value) }} />
            <label for='confirm-password'>Confirm the new password</label>
            <input id='confirm-password' type='password' autocomplete='new-password' required minLength={8} maxLength={1024} value={confirmation} onInput={(e) => { setConfirmation(e.currentTarget.value) }} />
            <ErrorNotice error={change.error} />
            <p role='status' class='small'>{done ? 'Password changed. Every other session was signed out.' : ''}</p>
            <button type='submit' class='primary' disabled={change.busy}>{change.busy ? 'Changing…' : 'Change password'}</button>
          </form>
        </section>
      </div>
    </section>
  )
}
