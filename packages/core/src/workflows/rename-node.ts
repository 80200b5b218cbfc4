import type { WorkflowNode } from '../db/schema/workflows.ts'
import type { NodeLinkField } from '../engine/nodes/definition.ts'
import { placeholders } from '../engine/template-syntax.ts'
import { DomainError } from '../errors.ts'

/**
 * Renaming a node (README, The workflow builder): its id and everything that names it, in one
 * pure function the api's rename route and the console both use. No database and no executors:
 * the console bundles it as `@switchboard/core/workflows/rename-node`.
 */

/**
 * What a rename reads of a node type: its traits, as the catalogue defines them and
 * `GET /api/automation/node-types` lists them (engine/nodes/definition.ts says what each means).
 */
export interface RenameTraits {
  links: readonly NodeLinkField[]
  flow?: 'fork' | 'join'
  resultPaths?: readonly string[]
  codeFields?: readonly string[]
}

/** Where a definition names a node: `field` is a config field (`text`, `body.total`, `cases.gold`), `next`, or `edges[i]`. */
export interface NodeReference {
  nodeId: string
  field: string
}

export interface RenamedDefinition {
  nodes: WorkflowNode[]
  edges: unknown
  /** The references changed, each named by the node that holds it after the rename. */
  rewritten: NodeReference[]
  /**
   * Mentions of the old id inside code (README, Code), left as they are: JavaScript is not
   * rewritten. Named by the node that holds them before the rename, so that the refusal points
   * at the workflow as it is.
   */
  unrewritable: NodeReference[]
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** What a template path cannot hold in a segment: a node with one of these in its id cannot be read by a template. */
const UNREADABLE_IN_PATH = /[.[\]{}|]|^\s|\s$/

/**
 * The segments of a path with where each lies in it, as `parsePath` (engine/template-syntax.ts)
 * splits them for every path the README shows: at `.`, and `[n]` as a segment of its own.
 */
function segmentsOf (path: string): Array<{ name: string, start: number, end: number }> {
  const segments: Array<{ name: string, start: number, end: number }> = []
  const push = (start: number, end: number): void => {
    const raw = path.slice(start, end)
    const name = raw.trim()
    if (name === '') return
    const lead = raw.length - raw.trimStart().length
    segments.push({ name, start: start + lead, end: start + lead + name.length })
  }
  let from = 0
  for (const match of path.matchAll(/\.|\[(\d+)\]/g)) {
    push(from, match.index)
    if (match[1] !== undefined) push(match.index + 1, match.index + 1 + match[1].length)
    from = match.index + match[0].length
  }
  push(from, path.length)
  return segments
}

/**
 * The path with every segment that names `from` as a node renamed: its root (`{{from.total}}`),
 * and below the output of a parallel node or a merge the branch and node ids it is keyed by
 * (`{{merge.from.from.body}}`, `{{fork.branches.from.outputs.from}}`: engine/nodes/merge.ts,
 * parallel.ts). Undefined when nothing in it names `from`.
 */
function renamedPath (path: string, from: string, to: string, flowOf: (nodeId: string) => 'fork' | 'join' | undefined): string | undefined {
  const segments = segmentsOf(path)
  const root = segments[0]
  if (root === undefined) return undefined
  const renamed = new Set<number>()
  if (root.name === from) renamed.add(0)
  const flow = flowOf(root.name)
  const keyed = flow === 'join' ? [1, 2] : flow === 'fork' && segments[1]?.name === 'branches' ? [2, 4] : []
  for (const index of keyed) if (segments[index]?.name === from) renamed.add(index)
  if (renamed.size === 0) return undefined
  let rewritten = path
  for (const index of [...renamed].sort((a, b) => b - a)) {
    const { start, end } = segments[index]!
    rewritten = rewritten.slice(0, start) + to + rewritten.slice(end)
  }
  return rewritten
}

/** Every placeholder of `text` whose path names `from`, renamed; undefined when none does. */
function renamedTemplate (text: string, from: string, to: string, flowOf: (nodeId: string) => 'fork' | 'join' | undefined): string | undefined {
  if (!text.includes('{{')) return undefined
  let rewritten = ''
  let copied = 0
  for (const { start, end, path } of placeholders(text)) {
    const renamed = renamedPath(path, from, to, flowOf)
    if (renamed === undefined) continue
    const inner = text.slice(start + 2, end - 2)
    // `path` is the placeholder's text before any filter, trimmed: it starts at the first non-blank.
    const pathStart = start + 2 + inner.length - inner.trimStart().length
    rewritten += text.slice(copied, pathStart) + renamed
    copied = pathStart + path.length
  }
  return copied === 0 ? undefined : rewritten + text.slice(copied)
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * Renames node `from` to `to` in a workflow's definition, leaving the input as it was: the node's
 * id, every link to it (`next`, its type's link fields, the builder's edges), every template that
 * reads its output in any string of any node's config, and the result paths of the types that take
 * them (a condition's `field`). Code is never rewritten: each code field that mentions the old id
 * (as a whole word: `input.from`, `input['from']`) is listed in `unrewritable`, for the caller to
 * confirm. `traitsOf` gives each node type's traits (unknown types: no links, no code).
 * Throws a 400 DomainError when `from` names no node, `to` is another node's id, or `to` could
 * not be read by the templates and paths that read `from`.
 */
export function renameNode (
  definition: { nodes: readonly WorkflowNode[], edges?: unknown },
  from: string,
  to: string,
  traitsOf: (type: string) => RenameTraits | undefined
): RenamedDefinition {
  const { nodes, edges } = definition
  if (!nodes.some((node) => node.id === from)) throw new DomainError('VALIDATION_ERROR', `from names no node of the workflow: ${from}`)
  if (from === to) return { nodes: [...nodes], edges, rewritten: [], unrewritable: [] }
  if (nodes.some((node) => node.id === to)) throw new DomainError('INVALID_WORKFLOW_GRAPH', `Duplicate node id: ${to}`)

  const types = new Map(nodes.map((node) => [node.id, node.type]))
  const flowOf = (nodeId: string) => { const type = types.get(nodeId); return type === undefined ? undefined : traitsOf(type)?.flow }
  const renamedId = (id: string): string => id === from ? to : id
  const mention = new RegExp(`(?<![\\w$])${escapeRegExp(from)}(?![\\w$])`)
  const rewritten: NodeReference[] = []
  const unrewritable: NodeReference[] = []
  let readByPaths = false

  /** Every string below `value` with its templates renamed; `field` names where it lies in the config. */
  const renameTemplates = (value: unknown, nodeId: string, field: string): unknown => {
    if (typeof value === 'string') {
      const renamed = renamedTemplate(value, from, to, flowOf)
      if (renamed === undefined) return value
      readByPaths = true
      rewritten.push({ nodeId, field })
      return renamed
    }
    if (Array.isArray(value)) return value.map((item, i) => renameTemplates(item, nodeId, `${field}[${i}]`))
    if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, renameTemplates(item, nodeId, `${field}.${key}`)]))
    return value
  }

  const renamedNodes = nodes.map((node): WorkflowNode => {
    const id = renamedId(node.id)
    const traits = traitsOf(node.type)
    const links = new Map((traits?.links ?? []).map((link) => [link.field, link.kind]))
    const code = new Set(traits?.codeFields ?? [])
    const paths = new Set(traits?.resultPaths ?? [])
    const linked = (field: string): void => { rewritten.push({ nodeId: id, field }) }
    const config: Record<string, unknown> = {}
    for (const [field, value] of Object.entries(node.config ?? {})) {
      const kind = links.get(field)
      if (code.has(field)) {
        if (typeof value === 'string' && mention.test(value)) unrewritable.push({ nodeId: node.id, field })
        config[field] = value
      } else if (kind === 'node' && value === from) {
        linked(field)
        config[field] = to
      } else if (kind === 'list' && Array.isArray(value)) {
        config[field] = value.map((target, i) => { if (target !== from) return target; linked(`${field}[${i}]`); return to })
      } else if (kind === 'map' && isRecord(value)) {
        config[field] = Object.fromEntries(Object.entries(value).map(([key, target]) => {
          if (target !== from) return [key, target]
          linked(`${field}.${key}`)
          return [key, to]
        }))
      } else if (paths.has(field) && typeof value === 'string' && !value.includes('{{')) {
        const renamed = renamedPath(value, from, to, flowOf)
        if (renamed !== undefined) {
          readByPaths = true
          linked(field)
        }
        config[field] = renamed ?? value
      } else {
        config[field] = renameTemplates(value, id, field)
      }
    }
    if (node.next === from) linked('next')
    return { ...node, id, ...(node.config !== undefined && { config }), ...(node.next === from && { next: to }) }
  })

  if (readByPaths && UNREADABLE_IN_PATH.test(to)) {
    throw new DomainError('VALIDATION_ERROR', `to cannot be read by a template: ${to} (templates read ${from}; a node id they read has no . [ ] { } | and no blank at either end)`)
  }

  const renamedEdges = Array.isArray(edges)
    ? edges.map((edge: unknown, i) => {
      if (!isRecord(edge) || (edge.source !== from && edge.target !== from)) return edge
      const source = edge.source === from ? to : edge.source
      rewritten.push({ nodeId: typeof source === 'string' ? source : '', field: `edges[${i}]` })
      return { ...edge, source, target: edge.target === from ? to : edge.target }
    })
    : edges

  return { nodes: renamedNodes, edges: renamedEdges, rewritten, unrewritable }
}
