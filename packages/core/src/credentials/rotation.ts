import { sql } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import { currentKeyPrefix, decryptSecret, encryptSecret, type Keyring } from '../encryption.ts'
import type { Logger } from '../logger.ts'

/** Every column holding a secret encrypted with ENCRYPTION_KEY. */
const ENCRYPTED_COLUMNS = [
  { table: 'credentials', column: 'data_encrypted' },
  { table: 'chat_accounts', column: 'access_token_encrypted' },
  { table: 'event_subscriptions', column: 'secret_encrypted' }
] as const

/** Rows re-encrypted per transaction: short locks, bounded memory. */
const BATCH_SIZE = 200

type RotationCounts = Record<typeof ENCRYPTED_COLUMNS[number]['table'], number>

/**
 * Re-encrypts every stored secret that is not yet under the current key (ENCRYPTION_KEY),
 * decrypting with any configured key (ENCRYPTION_KEYS_PREVIOUS). Batches of BATCH_SIZE rows,
 * each in its own transaction with the rows locked, so the api and workers keep running; a
 * second run finds nothing to do. A value no configured key decrypts stops the rotation with
 * its row id (never the value); what was done stays done.
 */
export async function rotateEncryptionKey ({ db, keyring, logger }: { db: Db, keyring: Keyring, logger: Logger }): Promise<RotationCounts> {
  const counts: RotationCounts = { credentials: 0, chat_accounts: 0, event_subscriptions: 0 }
  const prefix = currentKeyPrefix(keyring)
  for (const { table, column } of ENCRYPTED_COLUMNS) {
    const [tableName, columnName] = [sql.identifier(table), sql.identifier(column)]
    for (;;) {
      const rotated = await db.transaction(async (tx) => {
        const rows = await tx.execute<{ id: string, secret: string }>(sql`
          select id, ${columnName} as secret from ${tableName}
          where left(${columnName}, ${prefix.length}) <> ${prefix}
          order by id limit ${BATCH_SIZE} for update`)
        if (rows.length === 0) return 0
        const updates = rows.map(({ id, secret }) => {
          try {
            return { id, secret: encryptSecret(keyring, decryptSecret(keyring, secret)) }
          } catch (err) {
            throw new Error(`${table} ${id}: ${(err as Error).message}`)
          }
        })
        await tx.execute(sql`
          update ${tableName} set ${columnName} = rotated.secret
          from jsonb_to_recordset(${JSON.stringify(updates)}::jsonb) as rotated (id text, secret text)
          where ${tableName}.id = rotated.id`)
        return rows.length
      })
      if (rotated === 0) break
      counts[table] += rotated
      logger.info({ table, rotated: counts[table] }, 're-encrypting with the current key')
    }
  }
  return counts
}
