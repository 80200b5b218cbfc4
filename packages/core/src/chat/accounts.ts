import { and, eq, sql, type SQL } from 'drizzle-orm'
import { isAdmin, type Viewer } from '../users/viewer.ts'
import type { Config } from '../config.ts'
import type { DbOrTx } from '../db/client.ts'
import { chatAccounts, type ChatAccount } from '../db/schema/index.ts'
import { DomainError, unauthorized } from '../errors.ts'
import { textArray } from '../db/sql.ts'
import { chatAccountsRepository } from './accounts-repository.ts'
import { decryptSecret, keyringOf } from '../encryption.ts'

/** The id under which the installation's account from the environment can be selected. */
export const DEFAULT_ACCOUNT_ID = 'default'

/** An account ready to call the platform with: the token is decrypted. */
export interface UsableChatAccount {
  id: string
  name: string
  phoneNumberId: string
  businessAccountId: string | null
  accessToken: string
  /** A number with no platform (README, Sandbox numbers): its sends are stored as delivered, never sent. */
  isSandbox: boolean
}

export interface SelectOptions {
  /**
   * Workflows have no header to send: with several accounts they fall back to
   * the one marked isDefault, and name `accountId` when there is none.
   */
  forWorkflow?: boolean
}

const accountRequired = (): DomainError => new DomainError('CHAT_ACCOUNT_REQUIRED', 'X-Account-Id header is required')
export const accountNotFound = (): DomainError => new DomainError('CHAT_ACCOUNT_NOT_FOUND', 'Chat account not found')

/**
 * Which chat account a user sends and reads with (README, Chat): their
 * linked accounts, or, when they have none, the installation's default
 * account from the environment, shared like a team inbox.
 */
export function chatAccountResolver (options: { db: DbOrTx, config: Config }) {
  const { db, config } = options
  const repo = chatAccountsRepository(db)
  const keyring = keyringOf(config)
  const { phoneNumberId, accessToken, businessAccountId } = config.chat
  const environmentAccount: UsableChatAccount | null = phoneNumberId !== undefined && accessToken !== undefined
    ? { id: DEFAULT_ACCOUNT_ID, name: 'Default account', phoneNumberId, businessAccountId: businessAccountId ?? null, accessToken, isSandbox: false }
    : null

  /**
   * Of `users u`: the user linked no account of the platform, so the default account is theirs. A sandbox
   * number does not count (README, Sandbox numbers): creating one changes nothing for the inbox they use.
   */
  const linksNone = sql`not exists (select 1 from chat_accounts a where a.user_id = u.id and not a.is_sandbox)`

  /** Of `users u`: the user can select an account of the number. */
  const canUseNumber = (numberId: string): SQL => sql`(u.role = 'admin'
    or exists (select 1 from chat_accounts a where a.user_id = u.id and a.phone_number_id = ${numberId})
    or (${numberId === environmentAccount?.phoneNumberId} and ${linksNone}))`

  /** The users who linked an account matching `linked`, plus, when `shared` (the environment's account), everyone who linked none. */
  async function linkersOf (linked: SQL, shared: boolean): Promise<string[]> {
    const rows = await db.execute<{ id: string }>(sql`
      select distinct user_id as id from chat_accounts where ${linked}
      union
      select u.id from users u
      where ${shared} and ${linksNone}`)
    return rows.map((row) => row.id)
  }

  const usable = (account: ChatAccount): UsableChatAccount => ({
    id: account.id,
    name: account.name,
    phoneNumberId: account.phoneNumberId,
    businessAccountId: account.businessAccountId,
    accessToken: decryptSecret(keyring, account.accessTokenEncrypted),
    isSandbox: account.isSandbox
  })

  return {
    /**
     * `requestedId` is the X-Account-Id header (or a node's accountId). Only it names a sandbox number: the
     * implicit choices (the only account, the default one, the environment's) never count one (README, Sandbox numbers).
     */
    async select (user: Viewer, requestedId?: string, selectOptions: SelectOptions = {}): Promise<UsableChatAccount> {
      const admin = isAdmin(user)
      if (requestedId !== undefined && requestedId !== DEFAULT_ACCOUNT_ID) {
        const account = await repo.findWithSecret(requestedId, user)
        if (account === null) throw accountNotFound()
        return usable(account)
      }
      const linked = await repo.listOwnWithSecrets(user.id)
      if (linked === null) throw unauthorized()
      const own = linked.filter((account) => !account.isSandbox)
      if (requestedId === DEFAULT_ACCOUNT_ID) {
        if (environmentAccount === null || (own.length > 0 && !admin)) throw accountNotFound()
        return environmentAccount
      }
      if (own.length === 1) return usable(own[0])
      if (own.length === 0) {
        if (environmentAccount === null) {
          throw new DomainError('CHAT_ACCOUNT_MISSING', 'No chat account is configured: link one with POST /api/chat/accounts')
        }
        return environmentAccount
      }
      if (selectOptions.forWorkflow === true) {
        const preferred = own.find((account) => account.isDefault)
        if (preferred !== undefined) return usable(preferred)
        throw new DomainError('CHAT_ACCOUNT_REQUIRED', 'accountId is required: the workflow owner has several chat accounts and none is marked default')
      }
      throw accountRequired()
    },

    /** An account that sends from `numberId`, for what answers the number itself (the assistant): the environment's, else its first linker's. */
    async forNumber (numberId: string): Promise<UsableChatAccount | null> {
      if (numberId === environmentAccount?.phoneNumberId) return environmentAccount
      const [row] = await db.select().from(chatAccounts).where(eq(chatAccounts.phoneNumberId, numberId)).orderBy(chatAccounts.createdAt, chatAccounts.id).limit(1)
      return row === undefined ? null : usable(row)
    },

    /** The account `accountId` (a linked one's id or `default`) while it still sends from `numberId`: what a broadcast sends with. */
    async byId (accountId: string, numberId: string): Promise<UsableChatAccount | null> {
      if (accountId === DEFAULT_ACCOUNT_ID) return environmentAccount?.phoneNumberId === numberId ? environmentAccount : null
      const [row] = await db.select().from(chatAccounts).where(and(eq(chatAccounts.id, accountId), eq(chatAccounts.phoneNumberId, numberId))).limit(1)
      return row === undefined ? null : usable(row)
    },

    /**
     * Whether deliveries for this platform number belong to this installation: a sandbox number's come
     * only from its sandbox (`sandbox`), never through the platform's webhook, and the sandbox reaches no other.
     */
    async isKnownNumber (numberId: string, sandbox: boolean): Promise<boolean> {
      if (!sandbox && numberId === environmentAccount?.phoneNumberId) return true
      const [row] = await db.select({ id: chatAccounts.id }).from(chatAccounts)
        .where(and(eq(chatAccounts.phoneNumberId, numberId), eq(chatAccounts.isSandbox, sandbox))).limit(1)
      return row !== undefined
    },

    /**
     * The people an inbox conversation of `numberId` may be assigned to (README, The team inbox): whoever
     * can select an account of the number, the users of `userIdsFor` and the admins (who may select any
     * account), by email.
     */
    async agents (numberId: string, page: { limit: number, offset: number }): Promise<Array<{ id: string, email: string }>> {
      return db.execute<{ id: string, email: string }>(sql`
        select u.id, u.email from users u where ${canUseNumber(numberId)}
        order by u.email, u.id limit ${page.limit} offset ${page.offset}`)
    },

    /** Whether `userId` is one of the number's `agents`. */
    async isAgent (numberId: string, userId: string): Promise<boolean> {
      const [row] = await db.execute<{ id: string }>(sql`select u.id from users u where u.id = ${userId} and ${canUseNumber(numberId)}`)
      return row !== undefined
    },

    /** The ids of the number's `agents` among `emails` (lower case): a note's mentions; any other email stays text. */
    async agentIdsByEmail (numberId: string, emails: readonly string[]): Promise<string[]> {
      if (emails.length === 0) return []
      const rows = await db.execute<{ id: string }>(sql`
        select u.id from users u where u.email = any(${textArray(emails)}) and ${canUseNumber(numberId)} order by u.email`)
      return rows.map((row) => row.id)
    },

    /**
     * Of the number's `agents`, the one with the fewest open (not archived) conversations of the number
     * assigned to them, ties broken by email (a handoff's `least_busy`). `conversationId` itself is not
     * counted, so that a handoff run again picks the same person.
     */
    async leastBusyAgent (numberId: string, conversationId: string): Promise<string | null> {
      const [row] = await db.execute<{ id: string }>(sql`
        select u.id from users u where ${canUseNumber(numberId)}
        order by (select count(*) from conversations c where c.phone_number_id = ${numberId} and c.assigned_agent_id = u.id
          and not c.is_archived and c.id <> ${conversationId}), u.email, u.id
        limit 1`)
      return row?.id ?? null
    },

    /** Every user who can use the account that received a message: its linkers, plus, for the default account, everyone without one. */
    async userIdsFor (numberId: string): Promise<string[]> {
      return await linkersOf(sql`phone_number_id = ${numberId}`, numberId === environmentAccount?.phoneNumberId)
    },

    /** Every user who can use an account of the business account (its templates are theirs), as `userIdsFor` counts them. */
    async userIdsForBusinessAccount (businessAccountId: string): Promise<string[]> {
      return await linkersOf(sql`business_account_id = ${businessAccountId}`, businessAccountId === environmentAccount?.businessAccountId)
    }
  }
}
