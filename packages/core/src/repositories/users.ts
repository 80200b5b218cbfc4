import { asc, eq } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { users, type User, type UserRole } from '../db/schema/index.ts'
import { hashPassword } from '../auth/password.ts'

export type PublicUser = Pick<User, 'id' | 'email' | 'role' | 'createdAt'>

const publicColumns = { id: users.id, email: users.email, role: users.role, createdAt: users.createdAt }

export function usersRepository (db: DbOrTx) {
  return {
    async findByEmail (email: string): Promise<User | null> {
      const [user] = await db.select().from(users).where(eq(users.email, email.toLowerCase())).limit(1)
      return user ?? null
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

    async delete (id: string): Promise<boolean> {
      const deleted = await db.delete(users).where(eq(users.id, id)).returning({ id: users.id })
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
