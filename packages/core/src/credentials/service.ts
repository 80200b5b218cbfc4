import { recordAudit, type AuditContext } from '../audit/log.ts'
import type { Db } from '../db/client.ts'
import type { CredentialType } from '../db/schema/index.ts'
import type { Keyring } from '../encryption.ts'
import { DomainError } from '../errors.ts'
import { checkSavedQuotas, type Quotas } from '../users/quotas.ts'
import type { Viewer } from '../users/viewer.ts'
import { sealCredentialData } from './data.ts'
import { credentialReferences } from './references.ts'
import { credentialsRepository, isDuplicateName, isStillReferenced, type CredentialUser, type CredentialView } from './repository.ts'

export const credentialNotFound = (): DomainError => new DomainError('CREDENTIAL_NOT_FOUND', 'Credential not found')
const nameTaken = (): DomainError => new DomainError('CREDENTIAL_EXISTS', 'Credential name already in use')

/** Workflows a refusal names in `details` (the message names the first few). */
const MAX_USERS_LISTED = 50
const MAX_USERS_NAMED = 5

function inUse (what: string, users: CredentialUser[]): DomainError {
  const named = users.slice(0, MAX_USERS_NAMED).map((user) => user.name).join(', ')
  const more = users.length <= MAX_USERS_NAMED ? '' : users.length >= MAX_USERS_LISTED ? ' and more' : ` and ${users.length - MAX_USERS_NAMED} more`
  return new DomainError('CREDENTIAL_IN_USE', `Credential is ${what} by workflows: ${named}${more}`, {
    workflows: users.map(({ id, name }) => ({ id, name }))
  })
}

interface CredentialInput {
  name: string
  type: CredentialType
  data: Record<string, unknown>
}

interface CredentialChanges {
  name?: string
  data?: Record<string, unknown>
}

/**
 * Create, change and delete credentials: data checked per type and encrypted before it is stored.
 * Each takes the `audit` context of who acts, recorded in its transaction with the credential's
 * name and type, never its data.
 */
export function createCredentialService ({ db, keyring, quotas }: { db: Db, keyring: Keyring, quotas?: Quotas }) {
  const sealed = (type: CredentialType, data: Record<string, unknown>) => sealCredentialData(keyring, type, data)
  /** A write that may give the credential a name its owner already uses. */
  const named = async <T>(write: () => Promise<T>): Promise<T> => {
    try {
      return await write()
    } catch (err) {
      if (isDuplicateName(err)) throw nameTaken()
      throw err
    }
  }

  return {
    async create (viewer: Viewer, input: CredentialInput, audit?: AuditContext): Promise<CredentialView> {
      const stored = sealed(input.type, input.data)
      return named(async () => await db.transaction(async (tx) => {
        const created = await credentialsRepository(tx).create(viewer.id, { name: input.name, type: input.type, ...stored })
        if (quotas !== undefined) await checkSavedQuotas(tx, viewer.id, quotas, ['credentials'])
        if (audit !== undefined) await recordAudit(tx, audit, { action: 'credential.created', targetType: 'credential', targetId: created.id, details: { name: created.name, type: created.type } })
        return created
      }))
    },

    /**
     * `data` replaces all the fields (checked against the credential's type, which never changes).
     * A rename is refused while a workflow refers to the credential by its name: the reference
     * would break. Changed data reaches every later node run at once.
     */
    async update (viewer: Viewer, id: string, changes: CredentialChanges, audit?: AuditContext): Promise<CredentialView> {
      return db.transaction(async (tx) => {
        const repo = credentialsRepository(tx)
        const current = await repo.findForUpdate(viewer, id)
        if (current === null) throw credentialNotFound()
        if (changes.name !== undefined && changes.name !== current.name) {
          const users = await repo.usersOf(id, MAX_USERS_LISTED)
          const byName = users.filter((user) => credentialReferences(user.nodes).some((reference) => reference.ref === current.name))
          if (byName.length > 0) throw inUse('referred to by name', byName)
        }
        const stored = changes.data === undefined ? {} : sealed(current.type, changes.data)
        const updated = await named(async () => repo.update(id, { ...(changes.name !== undefined && { name: changes.name }), ...stored }))
        if (audit !== undefined) {
          await recordAudit(tx, audit, {
            action: 'credential.updated',
            targetType: 'credential',
            targetId: id,
            details: { name: current.name, type: current.type, ...(updated.name !== current.name && { renamedTo: updated.name }), dataReplaced: changes.data !== undefined }
          })
        }
        return updated
      })
    },

    /** Refused (409, naming them) while workflows refer to it. */
    async delete (viewer: Viewer, id: string, audit?: AuditContext): Promise<void> {
      await db.transaction(async (tx) => {
        const repo = credentialsRepository(tx)
        const current = await repo.findForUpdate(viewer, id)
        if (current === null) throw credentialNotFound()
        const users = await repo.usersOf(id, MAX_USERS_LISTED)
        if (users.length > 0) throw inUse('used', users)
        try {
          await repo.delete(id)
        } catch (err) {
          // A workflow saved a reference between the check and the delete.
          if (isStillReferenced(err)) throw inUse('used', await credentialsRepository(db).usersOf(id, MAX_USERS_LISTED))
          throw err
        }
        if (audit !== undefined) await recordAudit(tx, audit, { action: 'credential.deleted', targetType: 'credential', targetId: id, details: { name: current.name, type: current.type } })
      })
    }
  }
}

export type CredentialService = ReturnType<typeof createCredentialService>
