import type { CredentialType, Workflow, WorkflowNode } from '../db/schema/index.ts'
import { nodeCredentialReferences } from '../credentials/references.ts'
import { nodeDefinition } from '../engine/nodes/index.ts'

/** What a workflow export declares itself to be; an import refuses anything else. */
export const EXPORT_FORMAT = 'switchboard.workflow'
export const EXPORT_FORMAT_VERSION = 1

/** The definition an export carries: what a create takes, but never active (an import starts inactive); its limits too. */
type PortableDefinition = Pick<Workflow, 'name' | 'description' | 'triggerType' | 'triggerConfig' | 'nodes' | 'edges' | 'domain' | 'tags' | 'maxConcurrentRuns' | 'webhookRateLimit' | 'runTags' | 'flowControl' | 'cancelOn' | 'errorWorkflowId'>

export interface WorkflowExport {
  format: typeof EXPORT_FORMAT
  formatVersion: typeof EXPORT_FORMAT_VERSION
  exportedAt: string
  workflow: PortableDefinition
  /** The credentials the nodes refer to, by name: the importer needs credentials of these names. */
  credentials: Array<{ name: string, type: CredentialType }>
  /**
   * Where a value written into a node was removed: `nodes[0].config.headers.X-Api-Key`,
   * `nodes[0].config.query.api_key`, `nodes[0].config.url?access_token` (a parameter of the
   * URL), `nodes[0].config.url` (its user info), `nodes[0].config.secret`.
   */
  redacted: string[]
}

/** A value with a template is kept: it refers to data (or a credential) and holds no secret. */
const isLiteral = (value: unknown): boolean => typeof value !== 'string' || !value.includes('{{')
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** `scheme://user:password@` at the start of a URL, templated or not. */
const USER_INFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*)@/

/**
 * A URL as written (templates may stand anywhere in it, so it is cut as text rather than parsed)
 * without its literal user info and literal query parameters; `removed` gets what went.
 */
function portableUrl (url: string, at: string, removed: string[]): string {
  let portable = url
  const userInfo = USER_INFO.exec(portable)
  if (userInfo !== null && isLiteral(userInfo[2])) {
    portable = portable.replace(USER_INFO, '$1')
    removed.push(at)
  }
  const queryStart = portable.indexOf('?')
  if (queryStart === -1) return portable
  const fragmentStart = portable.indexOf('#', queryStart)
  const queryEnd = fragmentStart === -1 ? portable.length : fragmentStart
  const kept = portable.slice(queryStart + 1, queryEnd).split('&').filter((parameter) => {
    if (parameter === '') return false
    if (!isLiteral(parameter)) return true
    const name = parameter.split('=')[0]!
    removed.push(`${at}?${safeDecode(name)}`)
    return false
  })
  return `${portable.slice(0, queryStart)}${kept.length === 0 ? '' : `?${kept.join('&')}`}${portable.slice(queryEnd)}`
}

const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '))
  } catch {
    return text
  }
}

/**
 * A node with what an export must not carry taken out: the literal values of its type's
 * `secretFields` (http_request's header values but the harmless ones, its query parameters, in
 * `query` or in the URL, the URL's user info; verify_signature's secret; a template is kept, it
 * holds no secret), and credential ids, replaced by names.
 */
function portableNode (node: WorkflowNode, index: number, credentialNames: ReadonlyMap<string, string>, redacted: string[]): WorkflowNode {
  if (node.config === undefined) return node
  const config: Record<string, unknown> = { ...node.config }
  const at = `nodes[${index}].config`
  if (typeof config.credential === 'string' && credentialNames.has(config.credential)) config.credential = credentialNames.get(config.credential)
  for (const secret of nodeDefinition(node.type)?.traits.secretFields ?? []) {
    const { field } = secret
    const value = config[field]
    if (secret.kind === 'value' && value !== undefined && isLiteral(value)) {
      delete config[field]
      redacted.push(`${at}.${field}`)
    }
    if (secret.kind === 'entries' && isRecord(value)) {
      config[field] = Object.fromEntries(Object.entries(value).filter(([name, entry]) => {
        if (secret.keeps?.has(name.toLowerCase()) === true || !isLiteral(entry)) return true
        redacted.push(`${at}.${field}.${name}`)
        return false
      }))
    }
    if (secret.kind === 'url' && typeof value === 'string') config[field] = portableUrl(value, `${at}.${field}`, redacted)
  }
  return { ...node, config }
}

/**
 * The redacted places of an export (`redacted`, as exported) that the imported `nodes` leave
 * without a value: what the importer must fill in before the workflow can work.
 */
export function valuesToFill (nodes: readonly WorkflowNode[], redacted: readonly string[]): string[] {
  const filled = (place: string): boolean => {
    const found = /^nodes\[(\d+)\]\.config\.(.+)$/.exec(place)
    const node = found === null ? undefined : nodes[Number(found[1])]
    if (found === null || node?.config === undefined) return false
    const { config } = node
    const rest = found[2]!
    for (const secret of nodeDefinition(node.type)?.traits.secretFields ?? []) {
      const value = config[secret.field]
      if (secret.kind === 'value' && rest === secret.field) return value !== undefined || config.credential !== undefined
      if (secret.kind === 'entries' && rest.startsWith(`${secret.field}.`)) {
        const name = rest.slice(secret.field.length + 1).toLowerCase()
        return isRecord(value) && Object.keys(value).some((key) => key.toLowerCase() === name)
      }
      if (secret.kind === 'url') {
        const url = typeof value === 'string' ? value : ''
        if (rest === secret.field) return USER_INFO.test(url)
        if (rest.startsWith(`${secret.field}?`)) {
          const parameter = rest.slice(secret.field.length + 1)
          const query = url.split('#')[0]!.split('?')[1] ?? ''
          return query.split('&').some((pair) => safeDecode(pair.split('=')[0]!) === parameter)
        }
      }
    }
    return false
  }
  return redacted.filter((place) => !filled(place))
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
  const { name, description, triggerType, triggerConfig, edges, domain, tags, maxConcurrentRuns, webhookRateLimit, runTags, flowControl, cancelOn, errorWorkflowId } = workflow
  return {
    format: EXPORT_FORMAT,
    formatVersion: EXPORT_FORMAT_VERSION,
    exportedAt: now.toISOString(),
    workflow: { name, description, triggerType, triggerConfig, nodes, edges, domain, tags, maxConcurrentRuns, webhookRateLimit, runTags, flowControl, cancelOn, errorWorkflowId },
    credentials: referred.flatMap((ref) => types.has(ref) ? [{ name: ref, type: types.get(ref)! }] : []),
    redacted
  }
}
