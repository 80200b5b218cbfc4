import type { Db } from '../db/client.ts'
import type { WorkflowNode } from '../db/schema/workflows.ts'
import { DecryptionError, type Keyring } from '../encryption.ts'
import { NodeError, type CredentialResolver, type NodeCredential, type NodeSecrets } from '../engine/types.ts'
import { openCredentialData, secretValues } from './data.ts'
import { createRedactor, MAX_MASKED_CHARACTERS, maskedCharacters } from './redaction.ts'
import { nodeCredentialReferences } from './references.ts'
import { credentialsRepository } from './repository.ts'

const NO_SECRETS: NodeSecrets = { redact: (value) => value }

/**
 * The worker's credentials: for each node about to run, the credentials it refers to, loaded
 * (one query) and decrypted, only for that node; and the redaction of their values (and the
 * basic Authorization header they make) from what the node outputs and logs.
 */
export function createCredentialVault ({ db, keyring }: { db: Db, keyring: Keyring }): CredentialResolver {
  const repo = credentialsRepository(db)

  return {
    async forNode (userId: string, node: WorkflowNode): Promise<NodeSecrets> {
      const references = nodeCredentialReferences(node, { strict: false })
      if (references.length === 0) return NO_SECRETS
      const rows = await repo.findForRun(userId, [...new Set(references.map((reference) => reference.ref))])
      const open = (row: typeof rows[number]): NodeCredential => {
        try {
          return { name: row.name, type: row.type, data: openCredentialData(keyring, row.dataEncrypted) }
        } catch (err) {
          if (err instanceof DecryptionError) throw new NodeError(`Credential ${row.name} cannot be decrypted: ${err.message}`)
          throw err
        }
      }
      const opened = new Map(rows.map((row) => [row.id, open(row)]))
      const find = (ref: string, byId: boolean): NodeCredential => {
        const row = (byId ? rows.find((candidate) => candidate.id === ref) : undefined) ?? rows.find((candidate) => candidate.name === ref)
        if (row === undefined) throw new NodeError(`Credential ${ref} not found`)
        return opened.get(row.id)!
      }

      let credential: NodeCredential | undefined
      let templateScope: NodeSecrets['templateScope']
      for (const reference of references) {
        if (reference.via === 'credential') {
          credential = find(reference.ref, true)
        } else {
          templateScope ??= {}
          templateScope[reference.ref] = find(reference.ref, false).data
        }
      }
      const secrets = [...opened.values()].flatMap(({ type, data }) => secretValues(type, data))
      // Each credential fits when saved; several together may not (README, Credentials).
      const masked = maskedCharacters(secrets)
      if (masked > MAX_MASKED_CHARACTERS) {
        throw new NodeError(`The credentials of node ${node.id} are too long to mask: ${masked} characters in the forms runs mask, at most ${MAX_MASKED_CHARACTERS}`)
      }
      return { credential, templateScope, redact: createRedactor(secrets) }
    }
  }
}
