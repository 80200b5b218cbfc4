import { eq } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { chatDeliveries } from '../db/schema/index.ts'

/** Platform webhook deliveries between the webhook's answer and the worker's processing. */
export function chatDeliveriesRepository (db: DbOrTx) {
  return {
    async create (payload: unknown): Promise<string> {
      const [row] = await db.insert(chatDeliveries).values({ payload }).returning({ id: chatDeliveries.id })
      return row.id
    },

    /** Null when it was processed already (a job retried after its row was deleted). */
    async get (id: string): Promise<unknown> {
      const [row] = await db.select({ payload: chatDeliveries.payload }).from(chatDeliveries).where(eq(chatDeliveries.id, id)).limit(1)
      return row?.payload ?? null
    },

    async delete (id: string): Promise<void> {
      await db.delete(chatDeliveries).where(eq(chatDeliveries.id, id))
    }
  }
}
