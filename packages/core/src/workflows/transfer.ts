import type { CredentialType, Workflow, WorkflowNode } from '../db/schema/index.ts'
import { nodeCredentialReferences } from '../credentials/references.ts'

/** What a workflow export declares itself to be; an import refuses anything else. */
export const EXPORT_FORMAT = 'switchboard.workflow'
export const EXPORT_FORMAT_VERSION = 1

/** The definition an export carries: what a create takes, but never active (an import starts inactive); its limits too. */
type PortableDefinition = Pick<Workflow, 'name' | 'description' | 'triggerType' | 'triggerConfig' | 'nodes' | 'edges' | 'domain' | 'tags' | 'maxConcurrentRuns' | 'webhookRateLimit'>

export interface WorkflowExport {
  format: typeof EXPORT_FORMAT
  formatVersion: typeof EXPORT_FORMAT_VERSION
  exportedAt: string
  workflow: PortableDefinition
  /** The credentials the nodes refer to, by name: the importer needs credentials of these names. */
  credentials: Array<{ name: string, type: CredentialType }>
  /** Where a secret written into a node was removed (`nodes[0].config.headers.authorization`). */
  redacted: string[]
}

/** Request headers that carry secrets when written literally into an http_request node. */
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'x-api-key', 'api-key', 'x-auth-token', 'x-access-token'])

const isLiteral = (value: unknown): boolean => typeof value !== 'string' || !value.includes('{{')
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * A node with what an export must not carry taken out: literal secrets in the places nodes hold
 * them (secret headers and a URL's user info of http_request, the secret of verify_signature; a
 * template is kept, it holds no secret), and credential ids, replaced by names.
 */
function portableNode (node: WorkflowNode, index: number, credentialNames: ReadonlyMap<string, string>, redacted: string[]): WorkflowNode {
  if (node.config === undefined) return node
  const config: Record<string, unknown> = { ...node.config }
  const at = `nodes[${index}].config`
  if (typeof config.credential === 'string' && credentialNames.has(config.credential)) config.credential = credentialNames.get(config.credential)
  if (node.type === 'verify_signature' && config.secret !== undefined && isLiteral(config.secret)) {
    delete config.secret
    redacted.push(`${at}.secret`)
  }
  if (node.type === 'http_request') {
    if (isRecord(config.headers)) {
      const headers = { ...config.headers }
      for (const name of Object.keys(headers)) {
        if (SECRET_HEADERS.has(name.toLowerCase()) && isLiteral(headers[name])) {
          delete headers[name]
          redacted.push(`${at}.headers.${name}`)
        }
      }
      config.headers = headers
    }
    if (typeof config.url === 'string' && isLiteral(config.url)) {
      const url = URL.canParse(config.url) ? new URL(config.url) : undefined
      if (url !== undefined && (url.username !== '' || url.password !== '')) {
        url.username = ''
        url.password = ''
        config.url = url.toString()
        redacted.push(`${at}.url`)
      }
    }
  }
  return { ...node, config }
}

/**
 * A workflow as portable JSON (README, Export and import): its definition without ids,
 * owner, counters, activity or version, credentials by name, and no secret written into a node.
 * `credentials` are the owner's credentials the nodes refer to (id → name and type).
 */
export function exportWorkflow (workflow: Workflow, credentials: ReadonlyMap<string, { name: string, type: CredentialType }>, now = new Date()): WorkflowExport {
  const names = new Map([...credentials].map(([id, { name }]) => [id, name]))
  const redacted: string[] = []
  const nodes = workflow.nodes.map((node, i) => portableNode(node, i, names, redacted))
  const types = new Map([...credentials.values()].map(({ name, type }) => [name, type]))
  // As the workflow stands, even if it was saved before today's checks.
  const referred = [...new Set(nodes.flatMap((node) => nodeCredentialReferences(node, { strict: false })).map((reference) => reference.ref))]
  const { name, description, triggerType, triggerConfig, edges, domain, tags, maxConcurrentRuns, webhookRateLimit } = workflow
  return {
    format: EXPORT_FORMAT,
    formatVersion: EXPORT_FORMAT_VERSION,
    exportedAt: now.toISOString(),
    workflow: { name, description, triggerType, triggerConfig, nodes, edges, domain, tags, maxConcurrentRuns, webhookRateLimit },
    credentials: referred.flatMap((ref) => types.has(ref) ? [{ name: ref, type: types.get(ref)! }] : []),
    redacted
  }
}
