import { asc, eq, lt, sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { chatDeliveries } from '../db/schema/index.ts'

/** Platform webhook deliveries between the webhook's answer and the worker's processing. */
export function chatDeliveriesRepository (db: DbOrTx) {
  return {
    /** `id`: a sandbox delivery's (sandbox.ts); the platform webhook's get a generated one. */
    async create (payload: unknown, id?: string): Promise<string> {
      const [row] = await db.insert(chatDeliveries).values({ payload, ...(id !== undefined && { id }) }).returning({ id: chatDeliveries.id })
      return row.id
    },

    /** Null when it was processed already (a job retried after its row was deleted). */
    async get (id: string): Promise<unknown> {
      const [row] = await db.select({ payload: chatDeliveries.payload }).from(chatDeliveries).where(eq(chatDeliveries.id, id)).limit(1)
      return row?.payload ?? null
    },

    async delete (id: string): Promise<void> {
      await db.delete(chatDeliveries).where(eq(chatDeliveries.id, id))
    },

    /**
     * Deliveries stored more than `olderThanMs` ago and not processed yet (a processed one is
     * deleted), oldest first. The table holds only what is in flight, so it is read without an index.
     */
    async unprocessed (olderThanMs: number, limit: number): Promise<string[]> {
      const rows = await db.select({ id: chatDeliveries.id }).from(chatDeliveries)
        .where(lt(chatDeliveries.createdAt, sql`now() - ${`${olderThanMs} milliseconds`}::interval`))
        .orderBy(asc(chatDeliveries.createdAt)).limit(limit)
      return rows.map((row) => row.id)
    }
  }
}

export type ChatDeliveriesRepository = ReturnType<typeof chatDeliveriesRepository>
