import { and, asc, eq, inArray, or, type SQL } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { credentials, workflowCredentials, workflows, type Credential, type CredentialType, type WorkflowNode } from '../db/schema/index.ts'
import { isAdmin, type Viewer } from '../users/viewer.ts'

/** A credential as the API shows it: never its data, only the names of its fields. */
export type CredentialView = Omit<Credential, 'userId' | 'dataEncrypted'>

/** What a workflow save checks a reference against. */
export type CredentialSummary = Pick<Credential, 'id' | 'name' | 'type' | 'fields'>

interface NewCredential {
  name: string
  type: CredentialType
  fields: string[]
  dataEncrypted: string
}

type CredentialChanges = Partial<Pick<NewCredential, 'name' | 'fields' | 'dataEncrypted'>>

/** A workflow that refers to a credential, with the nodes a rename must look at. */
export interface CredentialUser {
  id: string
  name: string
  nodes: WorkflowNode[]
}

const viewColumns = {
  id: credentials.id,
  name: credentials.name,
  type: credentials.type,
  fields: credentials.fields,
  createdAt: credentials.createdAt,
  updatedAt: credentials.updatedAt
}

/** Whether a driver error is the unique (owner, name) index refusing a second credential of that name. */
export const isDuplicateName = (err: unknown): boolean => {
  const cause = (err as { cause?: { code?: string, constraint_name?: string } }).cause
  return cause?.code === '23505' && cause.constraint_name === 'credentials_user_name_key'
}

/** Whether a driver error is the reference from workflow_credentials refusing a delete. */
export const isStillReferenced = (err: unknown): boolean => {
  const cause = (err as { cause?: { code?: string, constraint_name?: string } }).cause
  return cause?.code === '23503' && cause.constraint_name === 'workflow_credentials_credential_id_credentials_id_fk'
}

/**
 * Credentials, scoped by owner like workflows (admins see all). Reads for the API never
 * select `data_encrypted`; only `findForRun` does, for the worker.
 */
export function credentialsRepository (db: DbOrTx) {
  const byId = (viewer: Viewer, id: string): SQL | undefined =>
    and(eq(credentials.id, id), isAdmin(viewer) ? undefined : eq(credentials.userId, viewer.id))
  /** Names, or ids, of one owner's credentials. */
  const ownedRefs = (userId: string, refs: readonly string[]): SQL | undefined =>
    and(eq(credentials.userId, userId), or(inArray(credentials.name, [...refs]), inArray(credentials.id, [...refs])))

  return {
    async create (userId: string, input: NewCredential): Promise<CredentialView> {
      const [created] = await db.insert(credentials).values({ ...input, userId }).returning(viewColumns)
      return created!
    },

    /** By name, then id: a picker's order. */
    async list (viewer: Viewer, page: { limit: number, offset: number }): Promise<CredentialView[]> {
      return db.select(viewColumns).from(credentials)
        .where(isAdmin(viewer) ? undefined : eq(credentials.userId, viewer.id))
        .orderBy(asc(credentials.name), asc(credentials.id))
        .limit(page.limit).offset(page.offset)
    },

    async find (viewer: Viewer, id: string): Promise<CredentialView | null> {
      const [found] = await db.select(viewColumns).from(credentials).where(byId(viewer, id)).limit(1)
      return found ?? null
    },

    /** The credential with its owner and type; `forUpdate` locks it until the transaction ends. */
    async findForUpdate (viewer: Viewer, id: string): Promise<Pick<Credential, 'id' | 'userId' | 'name' | 'type'> | null> {
      const [found] = await db.select({ id: credentials.id, userId: credentials.userId, name: credentials.name, type: credentials.type })
        .from(credentials).where(byId(viewer, id)).limit(1).for('update')
      return found ?? null
    },

    async update (id: string, changes: CredentialChanges): Promise<CredentialView> {
      const [updated] = await db.update(credentials).set(changes).where(eq(credentials.id, id)).returning(viewColumns)
      return updated!
    },

    async delete (id: string): Promise<void> {
      await db.delete(credentials).where(eq(credentials.id, id))
    },

    /** The workflows that refer to a credential, oldest first, at most `limit`. */
    async usersOf (credentialId: string, limit: number): Promise<CredentialUser[]> {
      return db.select({ id: workflows.id, name: workflows.name, nodes: workflows.nodes })
        .from(workflowCredentials).innerJoin(workflows, eq(workflows.id, workflowCredentials.workflowId))
        .where(eq(workflowCredentials.credentialId, credentialId))
        .orderBy(asc(workflows.createdAt), asc(workflows.id))
        .limit(limit)
    },

    /**
     * One owner's credentials that `refs` name (by name or id), without their data, locked
     * against deletes (KEY SHARE) until the caller's transaction ends.
     */
    async findByRefs (userId: string, refs: readonly string[]): Promise<CredentialSummary[]> {
      if (refs.length === 0) return []
      return db.select({ id: credentials.id, name: credentials.name, type: credentials.type, fields: credentials.fields })
        .from(credentials).where(ownedRefs(userId, refs)).for('key share')
    },

    /** The same, with the encrypted data: only the worker, executing a node, asks for it. */
    async findForRun (userId: string, refs: readonly string[]): Promise<Array<Pick<Credential, 'id' | 'name' | 'type' | 'dataEncrypted'>>> {
      return db.select({ id: credentials.id, name: credentials.name, type: credentials.type, dataEncrypted: credentials.dataEncrypted })
        .from(credentials).where(ownedRefs(userId, refs))
    },

    /** Records which credentials a workflow's saved nodes refer to, replacing what was recorded. */
    async recordUsage (workflowId: string, credentialIds: readonly string[]): Promise<void> {
      await db.delete(workflowCredentials).where(eq(workflowCredentials.workflowId, workflowId))
      if (credentialIds.length === 0) return
      await db.insert(workflowCredentials).values(credentialIds.map((credentialId) => ({ workflowId, credentialId })))
        .onConflictDoNothing()
    },

    /** The credentials a workflow refers to (as recorded when it was saved). */
    async usedBy (workflowId: string): Promise<Array<Pick<Credential, 'id' | 'name' | 'type'>>> {
      return db.select({ id: credentials.id, name: credentials.name, type: credentials.type })
        .from(workflowCredentials).innerJoin(credentials, eq(credentials.id, workflowCredentials.credentialId))
        .where(eq(workflowCredentials.workflowId, workflowId))
    }
  }
}

export type CredentialsRepository = ReturnType<typeof credentialsRepository>
