import type { CredentialType } from '../db/schema/credentials.ts'
import type { WorkflowNode } from '../db/schema/workflows.ts'
import { templatePaths } from '../engine/template.ts'
import { parsePath } from '../engine/template-syntax.ts'
import { nodeDefinition } from '../engine/nodes/index.ts'
import { DomainError } from '../errors.ts'

/** The template root under which a node reads its owner's credentials: `{{credentials.<name>.<field>}}`. */
const CREDENTIALS_SCOPE = 'credentials'

/**
 * Where a node of `type` may refer to credentials (its definition's `credentials` trait, README,
 * Credentials): the fields whose value it sends or signs with, `credential` where it authenticates
 * with one; none for a type that uses none, and for an unknown type.
 */
function credentialTraits (type: string): { fields: readonly string[], resolvesStale: boolean } {
  const traits = nodeDefinition(type)?.traits.credentials
  if (traits === 'never') return { fields: [], resolvesStale: false }
  return { fields: traits?.fields ?? [], resolvesStale: true }
}

/** The credential types a node of `type` accepts in its `credential` field. */
export const acceptedCredentialTypes = (type: string): readonly CredentialType[] => {
  const traits = nodeDefinition(type)?.traits.credentials
  return traits === undefined || traits === 'never' ? [] : traits.types
}

/** How a refusal names where a node may use credentials. */
function allowedFieldsOf (nodeType: string, fields: readonly string[]): string {
  return fields.length === 0 ? `${nodeType} nodes use none` : `${nodeType} nodes use them only in ${fields.join(', ')}`
}

/** One place a node refers to a credential: its `credential` field, or a template naming a field. */
export interface CredentialReference {
  nodeId: string
  /** A credential name, or (in `credential` only) an id. */
  ref: string
  via: 'credential' | 'template'
  /** The field a template reads. */
  field?: string
}

const invalidReference = (message: string): DomainError => new DomainError('INVALID_CREDENTIAL_REFERENCE', message)

/**
 * The credentials one node refers to. `strict` (a workflow being saved): a 400 naming the node
 * (and the field) when it refers to them in a way that cannot work (a `credential` that is not a
 * name, a template without a field) or in a field where its type may not use them
 * (its type's `credentials` trait). Otherwise (a run, whose definition was checked when saved, perhaps before
 * today's rules) malformed uses are not references, and a reference in a field no longer allowed
 * still resolves: stored workflows keep running until their next save.
 */
export function nodeCredentialReferences (node: WorkflowNode, { strict }: { strict: boolean }): CredentialReference[] {
  const refuse = (message: string): void => { if (strict) throw invalidReference(`Node ${node.id}: ${message}`) }
  const { fields: allowed, resolvesStale } = credentialTraits(node.type)
  const references: CredentialReference[] = []
  const config = node.config ?? {}
  if (config.credential !== undefined) {
    const { credential } = config
    if (!allowed.includes('credential')) refuse(`${node.type} nodes take no credential`)
    else if (typeof credential !== 'string' || credential === '' || credential.includes('{{')) refuse('credential must be the name or id of a credential')
    else references.push({ nodeId: node.id, ref: credential, via: 'credential' })
  }
  for (const [configField, value] of Object.entries(config)) {
    if (configField === 'credential') continue
    for (const path of templatePaths(value)) {
      const [root, name, field, ...rest] = parsePath(path)
      if (root !== CREDENTIALS_SCOPE) continue
      if (name === undefined || field === undefined || rest.length > 0) {
        refuse(`{{${path.slice(0, 200)}}} must read one field: {{credentials.<name>.<field>}}`)
        continue
      }
      if (!allowed.includes(configField)) {
        refuse(`credentials cannot be used in ${configField.slice(0, 64)}: ${allowedFieldsOf(node.type, allowed)}`)
        if (!resolvesStale) continue
      }
      references.push({ nodeId: node.id, ref: name, via: 'template', field })
    }
  }
  return references
}

/**
 * Every credential reference of a workflow being saved, in node order; a 400 for a node whose
 * id would hide the credentials' template root.
 */
export function credentialReferences (nodes: readonly WorkflowNode[]): CredentialReference[] {
  if (nodes.some((node) => node.id === CREDENTIALS_SCOPE)) {
    throw invalidReference(`Node id ${CREDENTIALS_SCOPE} is reserved for {{${CREDENTIALS_SCOPE}.<name>.<field>}}`)
  }
  return nodes.flatMap((node) => nodeCredentialReferences(node, { strict: true }))
}
