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
 * A chat message is stored on its conversation as sent, where a credential value would be
 * readable by everyone using the inbox: chat nodes cannot use credentials.
 */
const NO_CREDENTIAL_NODE_TYPES = ['send_chat', 'send_chat_template']

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
 * when it refers to them in a way that cannot work (a `credential` that is not a name, on a node
 * that takes none, a template without a field, credentials in a chat node). Otherwise (a run,
 * whose definition was checked when saved, or saved before credentials existed) such uses are
 * not references: they resolve nothing and stay what they were.
 */
export function nodeCredentialReferences (node: WorkflowNode, { strict }: { strict: boolean }): CredentialReference[] {
  const refuse = (message: string): void => { if (strict) throw invalidReference(`Node ${node.id}: ${message}`) }
  const config = node.config ?? {}
  const references: CredentialReference[] = []
  if (config.credential !== undefined) {
    const { credential } = config
    if (!Object.hasOwn(ACCEPTED_CREDENTIAL_TYPES, node.type)) refuse(`${node.type} nodes take no credential`)
    else if (typeof credential !== 'string' || credential === '' || credential.includes('{{')) refuse('credential must be the name or id of a credential')
    else references.push({ nodeId: node.id, ref: credential, via: 'credential' })
  }
  for (const path of templatePaths(config)) {
    const [root, name, field, ...rest] = parsePath(path)
    if (root !== CREDENTIALS_SCOPE) continue
    if (NO_CREDENTIAL_NODE_TYPES.includes(node.type)) refuse(`${node.type} nodes cannot use credentials`)
    else if (name === undefined || field === undefined || rest.length > 0) refuse(`{{${path.slice(0, 200)}}} must read one field: {{credentials.<name>.<field>}}`)
    else references.push({ nodeId: node.id, ref: name, via: 'template', field })
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
