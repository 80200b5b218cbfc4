import type { DbOrTx } from '../db/client.ts'
import type { WorkflowNode } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import { ACCEPTED_CREDENTIAL_TYPES, credentialReferences } from './references.ts'
import { credentialsRepository } from './repository.ts'

const invalidReference = (message: string): DomainError => new DomainError('INVALID_CREDENTIAL_REFERENCE', message)

/**
 * Checks every credential reference of a workflow's nodes against its owner's credentials
 * (a 400 naming the node for an unknown credential, a type its node cannot use, or a field the
 * credential lacks) and returns the ids referred to, for `recordUsage`. The credentials are
 * locked (KEY SHARE) until the save commits, so a concurrent delete waits and then sees the use.
 */
export async function checkWorkflowCredentials (db: DbOrTx, ownerId: string, nodes: readonly WorkflowNode[]): Promise<string[]> {
  const references = credentialReferences(nodes)
  if (references.length === 0) return []
  const found = await credentialsRepository(db).findByRefs(ownerId, [...new Set(references.map((reference) => reference.ref))])
  const types = new Map(nodes.map((node) => [node.id, node.type]))
  const ids = new Set<string>()
  for (const { nodeId, ref, via, field } of references) {
    const credential = (via === 'credential' ? found.find((candidate) => candidate.id === ref) : undefined) ??
      found.find((candidate) => candidate.name === ref)
    if (credential === undefined) throw invalidReference(`Node ${nodeId}: unknown credential ${ref}`)
    const nodeType = types.get(nodeId)!
    const accepted = ACCEPTED_CREDENTIAL_TYPES[nodeType] ?? []
    if (via === 'credential' && !accepted.includes(credential.type)) {
      throw invalidReference(`Node ${nodeId}: credential ${credential.name} is ${credential.type}; ${nodeType} takes ${accepted.join(', ')}`)
    }
    if (field !== undefined && !credential.fields.includes(field)) throw invalidReference(`Node ${nodeId}: credential ${credential.name} has no field ${field}`)
    ids.add(credential.id)
  }
  return [...ids]
}

/** Records the credentials a saved workflow refers to (what deleting a credential checks). */
export async function recordWorkflowCredentials (db: DbOrTx, workflowId: string, credentialIds: readonly string[]): Promise<void> {
  await credentialsRepository(db).recordUsage(workflowId, credentialIds)
}
