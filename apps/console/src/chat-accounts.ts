import type { ChatAccount } from './types.ts'
import { DEFAULT_ACCOUNT, loadSession } from './session.ts'

export interface AccountChoice { id: string, label: string }

/**
 * The accounts a user can send with: their linked accounts or, without any, the installation's
 * default account; an admin may pick any account and the default one too (as the inbox offers them).
 */
export function accountChoices (accounts: ChatAccount[]): AccountChoice[] {
  const session = loadSession()
  const admin = session?.user.role === 'admin'
  const own = accounts.filter((account) => account.userId === session?.user.id)
  const linked = (admin ? accounts : own).map((account) => ({ id: account.id, label: `${account.name}${account.displayPhoneNumber === null ? '' : ` (${account.displayPhoneNumber})`}` }))
  return own.length === 0 || admin ? [{ id: DEFAULT_ACCOUNT, label: 'Default account (installation)' }, ...linked] : linked
}

/** The account's name as the choices say it, or its id when the viewer cannot choose it (an admin's view of another's). */
export const accountLabel = (choices: AccountChoice[], id: string): string => choices.find((choice) => choice.id === id)?.label ?? id
