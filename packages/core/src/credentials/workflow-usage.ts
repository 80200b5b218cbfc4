import { isDeepStrictEqual } from 'node:util'
import type { DbOrTx } from '../db/client.ts'
import type { WorkflowNode } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import { acceptedCredentialTypes, credentialReferences, nodeCredentialReferences } from './references.ts'
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
    const accepted = acceptedCredentialTypes(nodeType)
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

/**
 * Only the owner of the credentials a workflow uses (its owner: references resolve among the
 * owner's credentials) may change its nodes while they use any (README, Credentials). Someone
 * else, an admin editing a member's workflow, may save nodes that use credentials only if each of
 * them is a node stored now, unchanged (removing nodes is allowed); otherwise they could send the
 * owner's secret elsewhere, or read it back, by adding or changing a reference or by changing a
 * node whose output a node using a credential reads. Reading, deactivating and deleting stay open.
 */
export function checkCredentialOwnerOnly (editorId: string, ownerId: string, stored: readonly WorkflowNode[], saved: readonly WorkflowNode[]): void {
  if (editorId === ownerId) return
  if (!saved.some((node) => nodeCredentialReferences(node, { strict: false }).length > 0)) return
  const changed = saved.find((node) => !stored.some((kept) => isDeepStrictEqual(kept, node)))
  if (changed !== undefined) {
    throw new DomainError('CREDENTIAL_OWNER_ONLY', `Node ${changed.id}: this workflow uses its owner's credentials; only its owner can add or change its nodes`)
  }
}
