import { asc, eq, sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { users, type User, type UserRole } from '../db/schema/index.ts'
import { hashPassword } from './password.ts'

type PublicUser = Pick<User, 'id' | 'email' | 'role' | 'createdAt'>

const publicColumns = { id: users.id, email: users.email, role: users.role, createdAt: users.createdAt }

/**
 * The Postgres channel on which a user's id is announced when the user is deleted, so that
 * every api replica stops honouring their token at once. A role changed by hand
 * (`update users set role = ...`) is announced with `notify switchboard_user_changes, '<id>'`.
 */
export const USER_CHANGES_CHANNEL = 'switchboard_user_changes'

export function usersRepository (db: DbOrTx) {
  return {
    async findByEmail (email: string): Promise<User | null> {
      const [user] = await db.select().from(users).where(eq(users.email, email.toLowerCase())).limit(1)
      return user ?? null
    },

    /** The role a token's user has now; null when the user no longer exists. */
    async roleOf (id: string): Promise<UserRole | null> {
      const [user] = await db.select({ role: users.role }).from(users).where(eq(users.id, id)).limit(1)
      return user?.role ?? null
    },

    async list (page: { limit: number, offset: number }): Promise<PublicUser[]> {
      return db.select(publicColumns).from(users).orderBy(asc(users.createdAt), asc(users.id))
        .limit(page.limit).offset(page.offset)
    },

    /** Returns null when the email is taken. */
    async create (input: { email: string, password: string, role: UserRole }): Promise<PublicUser | null> {
      const [user] = await db.insert(users)
        .values({ email: input.email.toLowerCase(), passwordHash: await hashPassword(input.password), role: input.role })
        .onConflictDoNothing({ target: users.email })
        .returning(publicColumns)
      return user ?? null
    },

    /** The announcement is part of the statement: it is delivered when, and only if, the delete commits. */
    async delete (id: string): Promise<boolean> {
      const deleted = await db.execute(sql`
        with deleted as (delete from ${users} where ${users.id} = ${id} returning ${users.id})
        select pg_notify(${USER_CHANGES_CHANNEL}, id) from deleted`)
      return deleted.length > 0
    },

    /** The admin of ADMIN_EMAIL, created at start when absent; an existing account is left as it is. */
    async ensureAdmin (email: string, password: string): Promise<void> {
      await db.insert(users)
        .values({ email: email.toLowerCase(), passwordHash: await hashPassword(password), role: 'admin' })
        .onConflictDoNothing({ target: users.email })
    }
  }
}
