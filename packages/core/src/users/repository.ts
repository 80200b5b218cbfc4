import { asc, eq, sql, type SQL } from 'drizzle-orm'
import { auditInsert, recordAudit, type AuditContext } from '../audit/log.ts'
import type { DbOrTx } from '../db/client.ts'
import { users, type User, type UserRole } from '../db/schema/index.ts'
import { textArray } from '../db/sql.ts'
import { DomainError, forbidden } from '../errors.ts'
import type { QuotaName } from './quotas.ts'
import { hashPassword } from './password.ts'
import type { TokenHolder } from './holder-cache.ts'

type PublicUser = Pick<User, 'id' | 'email' | 'role' | 'createdAt' | 'quotas'>

/** What the users routes answer: `quotas` are the user's own settings (the route adds the defaults). */
const publicColumns = { id: users.id, email: users.email, role: users.role, createdAt: users.createdAt, quotas: users.quotas }

/**
 * The Postgres channel on which a user's id is announced when the user is deleted, their role
 * changes or their password is changed, so that every api replica re-reads them at once. A
 * role changed by hand (`update users set role = ...`) is announced with
 * `notify switchboard_user_changes, '<id>'`.
 */
export const USER_CHANGES_CHANNEL = 'switchboard_user_changes'

/** What an admin may change of a user (`PATCH /api/users/:id`). */
export interface UserChanges {
  role?: UserRole
  password?: string
  /** Quotas to set for the user; null gives one back its default (users/quotas.ts). */
  quotas?: Partial<Record<QuotaName, number | null>>
}

/** The user's stored quotas with `changes` applied: numbers set, nulls removed. */
function quotasAfter (changes: NonNullable<UserChanges['quotas']>): SQL {
  const set = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== null))
  const removed = Object.keys(changes).filter((name) => changes[name as QuotaName] === null)
  return sql`(${users.quotas} || ${JSON.stringify(set)}::jsonb) - ${textArray(removed)}`
}

const lastAdmin = (action: 'demoted' | 'deleted'): DomainError => new DomainError('LAST_ADMIN', `The last admin cannot be ${action}`)

/**
 * Who manages users: an admin manages every account; a users:admin API key only members'
 * (`membersOnly`, README API keys): it makes no admin, sets no role, and changes or deletes no
 * admin's account, its owner's included, so that no key can make itself more than its scopes.
 * Refused 403 `Forbidden`.
 */
export interface UserManager {
  membersOnly: boolean
}
const EVERY_ACCOUNT: UserManager = { membersOnly: false }

export function usersRepository (db: DbOrTx) {
  /**
   * Refuses to take away the installation's last admin: the admins' rows are locked, so
   * that two admins demoting or deleting each other at once cannot both succeed (the
   * second re-reads the rows the first changed and finds itself the last).
   */
  async function keepAnAdmin (tx: DbOrTx, id: string, action: 'demoted' | 'deleted'): Promise<void> {
    const admins = await tx.select({ id: users.id }).from(users).where(eq(users.role, 'admin')).for('update')
    if (admins.length === 1 && admins[0]!.id === id) throw lastAdmin(action)
  }

  return {
    async findByEmail (email: string): Promise<User | null> {
      const [user] = await db.select().from(users).where(eq(users.email, email.toLowerCase())).limit(1)
      return user ?? null
    },

    async findById (id: string): Promise<User | null> {
      const [user] = await db.select().from(users).where(eq(users.id, id)).limit(1)
      return user ?? null
    },

    /** The role and token version a token's user has now; null when the user no longer exists. */
    async tokenHolder (id: string): Promise<TokenHolder> {
      const [user] = await db.select({ role: users.role, tokenVersion: users.tokenVersion, email: users.email }).from(users).where(eq(users.id, id)).limit(1)
      return user ?? null
    },

    /** Every admin's id (the default account's assistant tools are theirs: README, The assistant). */
    async adminIds (): Promise<string[]> {
      const rows = await db.select({ id: users.id }).from(users).where(eq(users.role, 'admin'))
      return rows.map((row) => row.id)
    },

    async list (page: { limit: number, offset: number }): Promise<PublicUser[]> {
      return db.select(publicColumns).from(users).orderBy(asc(users.createdAt), asc(users.id))
        .limit(page.limit).offset(page.offset)
    },

    /** Returns null when the email is taken. `audit`: who creates the user, recorded with it ('user.created'). */
    async create (input: { email: string, password: string, role: UserRole }, audit?: AuditContext, manager = EVERY_ACCOUNT): Promise<PublicUser | null> {
      if (manager.membersOnly && input.role !== 'member') throw forbidden()
      const passwordHash = await hashPassword(input.password)
      return db.transaction(async (tx) => {
        const [user] = await tx.insert(users)
          .values({ email: input.email.toLowerCase(), passwordHash, role: input.role })
          .onConflictDoNothing({ target: users.email })
          .returning(publicColumns)
        if (user === undefined) return null
        if (audit !== undefined) await recordAudit(tx, audit, { action: 'user.created', targetType: 'user', targetId: user.id, details: { email: user.email, role: user.role } })
        return user
      })
    },

    /**
     * A new password, which ends every token issued before it: the token version is raised
     * and announced in the same statement. Returns the new version (the caller's next token
     * carries it), or null when the user does not exist. `audit`: the user changing their own
     * password, recorded by the same statement ('auth.password_changed').
     */
    async setPassword (id: string, password: string, audit?: AuditContext): Promise<number | null> {
      const passwordHash = await hashPassword(password)
      const audited = audit === undefined
        ? sql``
        : sql`, audited as (${auditInsert(audit, { action: 'auth.password_changed', targetType: 'user' }, { cte: sql`changed`, targetId: sql`changed.id` })})`
      const [changed] = await db.execute<{ token_version: number }>(sql`
        with changed as (
          update ${users} set password_hash = ${passwordHash}, token_version = token_version + 1, updated_at = now()
          where ${users.id} = ${id} returning id, token_version)${audited}
        select token_version, pg_notify(${USER_CHANGES_CHANNEL}, id) from changed`)
      return changed?.token_version ?? null
    },

    /**
     * An admin's change of role and password, in one transaction; null when the user does not
     * exist. Demoting the last admin is refused (409). `audit`: the admin, recorded in the same
     * transaction: 'user.role_changed' (when the role is another), 'user.password_reset',
     * 'user.quotas_changed', one row each. A manager of members only changes no role, and no admin.
     */
    async update (id: string, changes: UserChanges, audit?: AuditContext, manager = EVERY_ACCOUNT): Promise<PublicUser | null> {
      if (manager.membersOnly && changes.role !== undefined) throw forbidden()
      const passwordHash = changes.password === undefined ? undefined : await hashPassword(changes.password)
      return db.transaction(async (tx) => {
        if (changes.role === 'member') await keepAnAdmin(tx, id, 'demoted')
        // After keepAnAdmin, which locks the admins' rows first, as every change of a role does;
        // locked, the role read is the one the change applies to (no promotion slips in between).
        const [before] = await tx.select({ role: users.role }).from(users).where(eq(users.id, id)).for('update')
        if (before === undefined) return null
        if (manager.membersOnly && before.role !== 'member') throw forbidden()
        // The row is locked: it is there to update.
        const user = (await tx.update(users)
          .set({
            ...(changes.role !== undefined && { role: changes.role }),
            ...(passwordHash !== undefined && { passwordHash, tokenVersion: sql`${users.tokenVersion} + 1` }),
            ...(changes.quotas !== undefined && { quotas: quotasAfter(changes.quotas) })
          })
          .where(eq(users.id, id))
          .returning(publicColumns))[0]!
        if (audit !== undefined) {
          const target = { targetType: 'user', targetId: id } as const
          if (changes.role !== undefined && changes.role !== before.role) {
            await recordAudit(tx, audit, { action: 'user.role_changed', ...target, details: { email: user.email, from: before.role, to: changes.role } })
          }
          if (passwordHash !== undefined) await recordAudit(tx, audit, { action: 'user.password_reset', ...target, details: { email: user.email } })
          if (changes.quotas !== undefined) await recordAudit(tx, audit, { action: 'user.quotas_changed', ...target, details: { email: user.email, quotas: changes.quotas } })
        }
        // Delivered when, and only if, the transaction commits.
        await tx.execute(sql`select pg_notify(${USER_CHANGES_CHANNEL}, ${id})`)
        return user
      })
    },

    /**
     * Deleting the last admin is refused (409). The announcement is delivered when, and only
     * if, the delete commits. `audit`: the admin, recorded by the delete's statement ('user.deleted').
     * A manager of members only deletes no admin: the row is locked while its role is read.
     */
    async delete (id: string, audit?: AuditContext, manager = EVERY_ACCOUNT): Promise<boolean> {
      return db.transaction(async (tx) => {
        if (manager.membersOnly) {
          const [target] = await tx.select({ role: users.role }).from(users).where(eq(users.id, id)).for('update')
          if (target !== undefined && target.role !== 'member') throw forbidden()
        } else {
          await keepAnAdmin(tx, id, 'deleted')
        }
        const audited = audit === undefined
          ? sql``
          : sql`, audited as (${auditInsert(audit, { action: 'user.deleted', targetType: 'user' }, { cte: sql`deleted`, targetId: sql`deleted.id`, details: sql`jsonb_build_object('email', deleted.email)` })})`
        const deleted = await tx.execute(sql`
          with deleted as (delete from ${users} where ${users.id} = ${id} returning ${users.id}, ${users.email})${audited}
          select pg_notify(${USER_CHANGES_CHANNEL}, id) from deleted`)
        return deleted.length > 0
      })
    },

    /** The admin of ADMIN_EMAIL, created at start when absent; an existing account is left as it is. */
    async ensureAdmin (email: string, password: string): Promise<void> {
      await db.insert(users)
        .values({ email: email.toLowerCase(), passwordHash: await hashPassword(password), role: 'admin' })
        .onConflictDoNothing({ target: users.email })
    }
  }
}

export type UsersRepository = ReturnType<typeof usersRepository>
