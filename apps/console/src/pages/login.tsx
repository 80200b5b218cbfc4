import { useState } from 'preact/hooks'
import { api } from '../api.ts'
import { useAction } from '../hooks.ts'
import { saveSession, type Session } from '../session.ts'

export function Login ({ onLogin }: { onLogin: (session: Session) => void }) {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const login = useAction(async () => {
    const { token, user } = await api.login(email.trim(), password)
    onLogin(saveSession(token, user))
  })
  return (
    <main id='main' class='login'>
      <form
        class='card login-card' onSubmit={(event) => {
          event.preventDefault()
          login.run()
        }}
      >
        <h1>Switchboard console</h1>
        <p class='muted'>Sign in with your Switchboard account. You stay signed in for 24 hours.</p>
        <label for='login-email'>Email</label>
        <input id='login-email' type='email' autocomplete='username' required value={email} onInput={(e) => { setEmail(e.currentTarget.value) }} />
        <label for='login-password'>Password</label>
        <input id='login-password' type='password' autocomplete='current-password' required value={password} onInput={(e) => { setPassword(e.currentTarget.value) }} />
        {login.error !== undefined && <p class='notice error' role='alert'>{login.error.message}</p>}
        <button type='submit' class='primary' disabled={login.busy}>{login.busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
    </main>
  )
}
