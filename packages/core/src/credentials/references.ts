import type { CredentialType } from '../db/schema/credentials.ts'
import type { WorkflowNode } from '../db/schema/workflows.ts'
import { parsePath, templatePaths } from '../engine/template.ts'
import { DomainError } from '../errors.ts'

/** The template root under which a node reads its owner's credentials: `{{credentials.<name>.<field>}}`. */
const CREDENTIALS_SCOPE = 'credentials'

/**
 * The node types with a `credential` field, and the credential types each accepts: http_request
 * authenticates with it, verify_signature verifies with an hmac secret.
 */
export const ACCEPTED_CREDENTIAL_TYPES: Readonly<Record<string, readonly CredentialType[]>> = {
  http_request: ['bearer', 'basic', 'header', 'hmac'],
  verify_signature: ['hmac']
}

/**
 * The config fields in which each node type may refer to a credential (README, Credentials): the
 * fields whose value it sends or signs with, `credential` where it authenticates with one. Never
 * a field whose value decides a branch, becomes an output or reaches a log (condition, set, the
 * chat nodes' text: a chat message is stored on its conversation, readable in the inbox). One
 * list per node type; a type not listed uses no credentials.
 */
const CREDENTIAL_FIELDS: Readonly<Record<string, readonly string[]>> = {
  http_request: ['credential', 'url', 'headers', 'query', 'body'],
  verify_signature: ['credential', 'secret']
}

/** Chat nodes never resolved credentials, not even in workflows stored before CREDENTIAL_FIELDS. */
const CHAT_NODE_TYPES = ['send_chat', 'send_chat_template']

/** How a refusal names where a node may use credentials. */
function allowedFieldsOf (nodeType: string): string {
  const fields = CREDENTIAL_FIELDS[nodeType]
  return fields === undefined ? `${nodeType} nodes use none` : `${nodeType} nodes use them only in ${fields.join(', ')}`
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
 * (CREDENTIAL_FIELDS). Otherwise (a run, whose definition was checked when saved, perhaps before
 * today's rules) malformed uses are not references, and a reference in a field no longer allowed
 * still resolves: stored workflows keep running until their next save.
 */
export function nodeCredentialReferences (node: WorkflowNode, { strict }: { strict: boolean }): CredentialReference[] {
  const refuse = (message: string): void => { if (strict) throw invalidReference(`Node ${node.id}: ${message}`) }
  const allowed = CREDENTIAL_FIELDS[node.type] ?? []
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
        refuse(`credentials cannot be used in ${configField.slice(0, 64)}: ${allowedFieldsOf(node.type)}`)
        if (CHAT_NODE_TYPES.includes(node.type)) continue
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
