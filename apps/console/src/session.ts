import type { SessionUser } from './types.ts'

/**
 * The login's token, kept in localStorage for as long as it is valid (its `exp`, 24 hours
 * after login: README, Signing in), so that a reload or a second tab stays signed in.
 */
export interface Session {
  token: string
  user: SessionUser
  /** Milliseconds since the epoch. */
  expiresAt: number
}

const KEY = 'switchboard.console.session'
const TOKEN_LIFETIME_MS = 24 * 3600 * 1000

function expiryOf (token: string): number {
  try {
    const payload = JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))) as { exp?: unknown }
    if (typeof payload.exp === 'number') return payload.exp * 1000
  } catch {
    // A token the console cannot read still works until the api says otherwise.
  }
  return Date.now() + TOKEN_LIFETIME_MS
}

export function loadSession (): Session | null {
  try {
    const session = JSON.parse(localStorage.getItem(KEY) ?? 'null') as Session | null
    if (session !== null && typeof session.token === 'string' && session.expiresAt > Date.now()) return session
  } catch {
    // Unreadable: treated as signed out.
  }
  localStorage.removeItem(KEY)
  return null
}

export function saveSession (token: string, user: SessionUser): Session {
  const session = { token, user, expiresAt: expiryOf(token) }
  localStorage.setItem(KEY, JSON.stringify(session))
  return session
}

export function clearSession (): void {
  localStorage.removeItem(KEY)
}

const ACCOUNT_KEY = 'switchboard.console.account'
/** The installation's account from the environment, as X-Account-Id names it. */
export const DEFAULT_ACCOUNT = 'default'

/** The chat account last chosen in the inbox, in this browser: the overview counts its drafts. */
export const chosenAccount = (): string | null => localStorage.getItem(ACCOUNT_KEY)

export function chooseAccount (id: string): void {
  localStorage.setItem(ACCOUNT_KEY, id)
}
