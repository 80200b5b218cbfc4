import { and, asc, eq, ne, sql, type SQL } from 'drizzle-orm'
import { isAdmin, type Viewer } from '../users/viewer.ts'
import type { DbOrTx } from '../db/client.ts'
import { chatAccounts, users, type ChatAccount } from '../db/schema/index.ts'

type PublicChatAccount = Omit<ChatAccount, 'accessTokenEncrypted' | 'updatedAt'>

export interface NewChatAccount {
  name: string
  phoneNumberId: string
  businessAccountId?: string | null
  displayPhoneNumber?: string | null
  accessTokenEncrypted: string
  isDefault?: boolean
}

export type ChatAccountChanges = Partial<NewChatAccount>

const publicColumns = {
  id: chatAccounts.id,
  userId: chatAccounts.userId,
  name: chatAccounts.name,
  phoneNumberId: chatAccounts.phoneNumberId,
  businessAccountId: chatAccounts.businessAccountId,
  displayPhoneNumber: chatAccounts.displayPhoneNumber,
  isDefault: chatAccounts.isDefault,
  isSandbox: chatAccounts.isSandbox,
  createdAt: chatAccounts.createdAt
}

/** Whose accounts a caller may touch: their own, or every account for an admin. */
const scoped = (viewer: Viewer, condition: SQL): SQL | undefined =>
  isAdmin(viewer) ? condition : and(condition, eq(chatAccounts.userId, viewer.id))

export function chatAccountsRepository (db: DbOrTx) {
  /** At most one default account per user: marking one clears the others. */
  async function clearOtherDefaults (tx: DbOrTx, userId: string, keepId: string): Promise<void> {
    await tx.update(chatAccounts).set({ isDefault: false })
      .where(and(eq(chatAccounts.userId, userId), ne(chatAccounts.id, keepId), eq(chatAccounts.isDefault, true)))
  }

  return {
    async list (viewer: Viewer, page: { limit: number, offset: number }): Promise<PublicChatAccount[]> {
      return db.select(publicColumns).from(chatAccounts)
        .where(isAdmin(viewer) ? undefined : eq(chatAccounts.userId, viewer.id))
        .orderBy(asc(chatAccounts.createdAt), asc(chatAccounts.id))
        .limit(page.limit).offset(page.offset)
    },

    /**
     * The user's own linked accounts, secrets included, for choosing which one to send with;
     * null when the user no longer exists (a deleted user's token is still signed).
     */
    async listOwnWithSecrets (userId: string): Promise<ChatAccount[] | null> {
      const rows = await db.select({ account: chatAccounts }).from(users)
        .leftJoin(chatAccounts, eq(chatAccounts.userId, users.id))
        .where(eq(users.id, userId))
        .orderBy(asc(chatAccounts.createdAt), asc(chatAccounts.id))
      if (rows.length === 0) return null
      return rows.flatMap((row) => row.account === null ? [] : [row.account])
    },

    /** An account in the viewer's scope; a member's own accounts go with them, an admin must still exist to see others. */
    async findWithSecret (id: string, viewer: Viewer): Promise<ChatAccount | null> {
      const viewerExists = sql`exists (select 1 from ${users} where ${users.id} = ${viewer.id})`
      const [account] = await db.select().from(chatAccounts)
        .where(and(scoped(viewer, eq(chatAccounts.id, id)), isAdmin(viewer) ? viewerExists : undefined)).limit(1)
      return account ?? null
    },

    /** Returns null when the user has already linked this phone number. */
    async create (userId: string, input: NewChatAccount): Promise<PublicChatAccount | null> {
      return db.transaction(async (tx) => {
        const [account] = await tx.insert(chatAccounts).values({ ...input, userId })
          .onConflictDoNothing({ target: [chatAccounts.userId, chatAccounts.phoneNumberId] })
          .returning(publicColumns)
        if (account !== undefined && account.isDefault) await clearOtherDefaults(tx, userId, account.id)
        return account ?? null
      })
    },

    /** Returns null when the account is not in scope; a phone number the owner already linked violates the unique index. */
    async update (id: string, viewer: Viewer, changes: ChatAccountChanges): Promise<PublicChatAccount | null> {
      return db.transaction(async (tx) => {
        const [account] = await tx.update(chatAccounts).set({ ...changes, updatedAt: new Date() })
          .where(scoped(viewer, eq(chatAccounts.id, id)))
          .returning(publicColumns)
        if (account !== undefined && changes.isDefault === true) await clearOtherDefaults(tx, account.userId, account.id)
        return account ?? null
      })
    },

    async delete (id: string, viewer: Viewer): Promise<boolean> {
      const deleted = await db.delete(chatAccounts).where(scoped(viewer, eq(chatAccounts.id, id))).returning({ id: chatAccounts.id })
      return deleted.length > 0
    },

    /** The users who linked this platform number. */
    async ownerIdsOf (phoneNumberId: string): Promise<string[]> {
      const rows = await db.selectDistinct({ userId: chatAccounts.userId }).from(chatAccounts)
        .where(eq(chatAccounts.phoneNumberId, phoneNumberId))
      return rows.map((row) => row.userId)
    }
  }
}

export type ChatAccountsRepository = ReturnType<typeof chatAccountsRepository>
