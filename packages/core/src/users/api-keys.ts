import { createHash, randomBytes } from 'node:crypto'
import { and, desc, eq, sql } from 'drizzle-orm'
import { auditInsert, recordAudit, type AuditContext } from '../audit/log.ts'
import type { DbOrTx } from '../db/client.ts'
import { ADMIN_SCOPES, apiKeys, users, workflows, type ApiKey, type ApiKeyScope } from '../db/schema/index.ts'
import { textArray } from '../db/sql.ts'
import { DomainError, forbidden } from '../errors.ts'
import { USER_CHANGES_CHANNEL } from './repository.ts'
import { isAdmin, type Viewer } from './viewer.ts'

/**
 * API keys (README, API keys). A key is `sbk_` and 43 characters of base64url (256 random bits):
 * the prefix tells it from a JWT (which starts `eyJ`) at the first byte. Only its SHA-256 is
 * stored: a key has the entropy a password lacks, so a fast hash is as safe as a slow one, and a
 * lookup by hash through a unique index reveals nothing of the secret through its timing.
 */
export const API_KEY_PREFIX = 'sbk_'
const SECRET_BYTES = 32
const API_KEY_LENGTH = API_KEY_PREFIX.length + Math.ceil(SECRET_BYTES * 4 / 3)
const HINT_LENGTH = API_KEY_PREFIX.length + 6

/** Keys one user may hold (revoked ones included, since they stay listed). */
export const MAX_API_KEYS_PER_USER = 50
/** Workflows one key may be limited to. */
export const MAX_KEY_WORKFLOWS = 100

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex')

/** Whether a bearer token is meant as an API key: then it is never tried as a JWT. */
export const isApiKeyShaped = (token: string): boolean => token.startsWith(API_KEY_PREFIX)
/** Whether it could be a key this installation issued: anything else is refused before any lookup. */
export const isWellFormedApiKey = (token: string): boolean =>
  token.length === API_KEY_LENGTH && /^[A-Za-z0-9_-]+$/.test(token.slice(API_KEY_PREFIX.length))

/** What authenticating a request with a key needs, cached by each api replica (users/api-key-cache.ts). */
export interface KeyHolder {
  id: string
  userId: string
  scopes: readonly ApiKeyScope[]
  workflowIds: readonly string[] | null
  expiresAt: Date | null
  revoked: boolean
}

/** What the key routes answer: never the secret, nor its hash. */
export type PublicApiKey = Pick<ApiKey, 'id' | 'userId' | 'name' | 'hint' | 'scopes' | 'workflowIds' | 'expiresAt' | 'lastUsedAt' | 'revokedAt' | 'createdAt'>
const publicColumns = {
  id: apiKeys.id,
  userId: apiKeys.userId,
  name: apiKeys.name,
  hint: apiKeys.hint,
  scopes: apiKeys.scopes,
  workflowIds: apiKeys.workflowIds,
  expiresAt: apiKeys.expiresAt,
  lastUsedAt: apiKeys.lastUsedAt,
  revokedAt: apiKeys.revokedAt,
  createdAt: apiKeys.createdAt
}

export interface NewApiKey {
  name: string
  scopes: readonly ApiKeyScope[]
  workflowIds?: readonly string[]
  expiresAt?: Date
}

/** A key's latest use, and who used it first since the last flush (its first use's audit row names that request). */
export interface KeyUse {
  at: Date
  first: AuditContext
}

export const apiKeyNotFound = (): DomainError => new DomainError('API_KEY_NOT_FOUND', 'API key not found')

export function apiKeysRepository (db: DbOrTx) {
  return {
    /**
     * A key for the viewer, returned with its secret (the only time it is). Admin scopes need an
     * admin (403); the workflows it is limited to must be the viewer's (admins: any) and exist.
     * Recorded in the audit log ('api_key.created') by the same transaction.
     */
    async create (viewer: Viewer, input: NewApiKey, audit: AuditContext): Promise<{ key: PublicApiKey, secret: string }> {
      const scopes = [...new Set(input.scopes)]
      if (!isAdmin(viewer) && scopes.some((scope) => ADMIN_SCOPES.includes(scope))) throw forbidden()
      if (input.expiresAt !== undefined && input.expiresAt.getTime() <= Date.now()) {
        throw new DomainError('VALIDATION_ERROR', 'expiresAt must be in the future')
      }
      const workflowIds = input.workflowIds === undefined ? null : [...new Set(input.workflowIds)]
      const secret = API_KEY_PREFIX + randomBytes(SECRET_BYTES).toString('base64url')
      return db.transaction(async (tx) => {
        // The owner's row, locked: two creations at once both see the other's key in the count.
        const [owner] = await tx.select({ keys: sql<number>`(select count(*)::int from ${apiKeys} where ${apiKeys.userId} = ${viewer.id})` })
          .from(users).where(eq(users.id, viewer.id)).for('update')
        if (owner === undefined) throw new DomainError('UNAUTHORIZED', 'Unauthorized')
        if (owner.keys >= MAX_API_KEYS_PER_USER) {
          throw new DomainError('QUOTA_EXCEEDED', `At most ${MAX_API_KEYS_PER_USER} API keys per user; delete revoked ones first`)
        }
        if (workflowIds !== null && workflowIds.length > 0) {
          const found = await tx.select({ id: workflows.id }).from(workflows).where(and(
            sql`${workflows.id} = any(${textArray(workflowIds)})`,
            isAdmin(viewer) ? undefined : eq(workflows.userId, viewer.id)
          ))
          const missing = workflowIds.find((id) => !found.some((row) => row.id === id))
          if (missing !== undefined) throw new DomainError('VALIDATION_ERROR', `workflowIds names a workflow that does not exist: ${missing}`)
        }
        const [key] = await tx.insert(apiKeys).values({
          userId: viewer.id,
          name: input.name,
          hint: secret.slice(0, HINT_LENGTH),
          secretHash: hashApiKey(secret),
          scopes,
          workflowIds,
          expiresAt: input.expiresAt ?? null
        }).returning(publicColumns)
        await recordAudit(tx, audit, {
          action: 'api_key.created',
          targetType: 'api_key',
          targetId: key!.id,
          details: { name: key!.name, hint: key!.hint, scopes: key!.scopes, workflowIds: key!.workflowIds, expiresAt: key!.expiresAt }
        })
        return { key: key!, secret }
      })
    },

    /** The viewer's keys, newest first; an admin's list holds every user's. */
    async list (viewer: Viewer, page: { limit: number, offset: number }): Promise<PublicApiKey[]> {
      return db.select(publicColumns).from(apiKeys)
        .where(isAdmin(viewer) ? undefined : eq(apiKeys.userId, viewer.id))
        .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
        .limit(page.limit).offset(page.offset)
    },

    /**
     * Revokes a key of the viewer's (admins: anyone's), announced to every replica on the
     * user-changes channel and recorded in the audit log ('api_key.revoked') by the same statement;
     * a revoked key is answered as a missing one.
     */
    async revoke (viewer: Viewer, id: string, audit: AuditContext): Promise<PublicApiKey> {
      const [key] = await db.execute<PublicApiKey & Record<string, unknown>>(sql`
        with revoked as (
          update ${apiKeys} set revoked_at = now()
          where ${apiKeys.id} = ${id} and ${apiKeys.revokedAt} is null
            ${isAdmin(viewer) ? sql`` : sql`and ${apiKeys.userId} = ${viewer.id}`}
          returning *
        ), audited as (
          ${auditInsert(audit, { action: 'api_key.revoked', targetType: 'api_key' }, { cte: sql`revoked`, targetId: sql`revoked.id`, details: sql`jsonb_build_object('name', revoked.name, 'hint', revoked.hint, 'owner', revoked.user_id)` })}
        )
        select id, user_id as "userId", name, hint, scopes, workflow_ids as "workflowIds", expires_at as "expiresAt",
          last_used_at as "lastUsedAt", revoked_at as "revokedAt", created_at as "createdAt", pg_notify(${USER_CHANGES_CHANNEL}, user_id)
        from revoked`)
      if (key === undefined) throw apiKeyNotFound()
      const { pg_notify: _notified, ...answer } = key
      return answer as PublicApiKey
    },

    /** The key of this hash, revoked or not, or null when there is none. */
    async holderOf (secretHash: string): Promise<KeyHolder | null> {
      const [key] = await db.select({
        id: apiKeys.id,
        userId: apiKeys.userId,
        scopes: apiKeys.scopes,
        workflowIds: apiKeys.workflowIds,
        expiresAt: apiKeys.expiresAt,
        revoked: sql<boolean>`${apiKeys.revokedAt} is not null`
      }).from(apiKeys).where(eq(apiKeys.secretHash, secretHash)).limit(1)
      return key ?? null
    },

    /**
     * Writes the time each key was last used, for many keys in one statement (each replica
     * gathers them between flushes), and records the first use of a key in the audit log
     * ('api_key.first_used', with the request that used it) in the same transaction.
     */
    async recordUse (lastUsed: ReadonlyMap<string, KeyUse>): Promise<void> {
      if (lastUsed.size === 0) return
      const ids = [...lastUsed.keys()]
      const times = ids.map((id) => lastUsed.get(id)!.at.toISOString())
      await db.transaction(async (tx) => {
        // Two statements: a CTE that locked the rows beside one that updated them let the plan
        // update first, and the lock then skipped the rows this statement had updated, so a
        // first use was sometimes not recorded. Locked here, a replica's concurrent flush waits
        // and then finds the time set: each first use is recorded once.
        const firstUses = await tx.execute<{ id: string }>(sql`
          select ${apiKeys.id} as id from ${apiKeys}
          where ${apiKeys.id} = any(${textArray(ids)}) and ${apiKeys.lastUsedAt} is null
          order by ${apiKeys.id} for update`)
        await tx.execute(sql`
          update ${apiKeys} set last_used_at = greatest(${apiKeys.lastUsedAt}, used.at)
          from unnest(${textArray(ids)}, ${textArray(times)}::timestamptz[]) as used(id, at)
          where ${apiKeys.id} = used.id`)
        for (const { id } of firstUses) {
          const use = lastUsed.get(id)!
          await recordAudit(tx, use.first, { action: 'api_key.first_used', targetType: 'api_key', targetId: id })
        }
      })
    }
  }
}

export type ApiKeysRepository = ReturnType<typeof apiKeysRepository>
