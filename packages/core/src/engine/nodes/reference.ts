import { describeNodeTypes, type NodeTypeDescription } from './index.ts'

/**
 * docs/nodes.md, written from the definitions (`pnpm docs:nodes`; a test fails when the file is
 * stale), so that the reference of every node type's config is the code's.
 */

interface FieldSchema {
  type?: string
  description?: string
  default?: unknown
  enum?: unknown[]
  examples?: unknown[]
  anyOf?: FieldSchema[]
  pattern?: string
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  maxItems?: number
  format?: string
}

const TEMPLATE_PATTERN = '\\{\\{'

const cell = (text: string): string => text.replaceAll('|', '\\|').replaceAll('\n', ' ')

/** `string`, `number 0–60`, `GET, POST…`: what a field takes, in a few words. */
function typeOf (schema: FieldSchema): { text: string, templated: boolean } {
  const branches = schema.anyOf ?? [schema]
  const templated = branches.some((branch) => branch.pattern === TEMPLATE_PATTERN)
  const kinds = branches.filter((branch) => branch.pattern !== TEMPLATE_PATTERN).map((branch) => {
    // A string's examples are its choices (oneOfAnyCase); an object's example is no kind.
    if (branch.examples !== undefined && branch.type === 'string') return branch.examples.join(', ')
    if (branch.enum !== undefined) return branch.enum.join(', ')
    const bounds = branch.minimum !== undefined || branch.maximum !== undefined ? ` ${branch.minimum ?? ''}–${branch.maximum ?? ''}` : ''
    const length = branch.maxLength !== undefined ? ` ≤ ${branch.maxLength} chars` : branch.maxItems !== undefined ? ` ≤ ${branch.maxItems} items` : ''
    return `${branch.format ?? branch.type ?? 'any'}${bounds}${length}`
  })
  return { text: [...new Set(kinds)].join(' or '), templated }
}

function traitsLine ({ traits }: NodeTypeDescription): string {
  const parts = [traits.pure ? 'pure (runs in memory between checkpoints)' : 'outside effect (checkpointed before and after)']
  if (traits.credentials !== 'never' && traits.credentials.fields.length > 0) {
    parts.push(`credentials in ${traits.credentials.fields.join(', ')}${traits.credentials.types.length > 0 ? ` (credential: ${traits.credentials.types.join(', ')})` : ''}`)
  }
  if (traits.links.length > 0) parts.push(`links: ${traits.links.map((link) => link.field).join(', ')}`)
  if (traits.templateFields !== 'every') parts.push(`templates only in: ${traits.templateFields.length === 0 ? 'none' : traits.templateFields.join(', ')}`)
  parts.push(traits.retries.allowed ? `retry and timeoutMs${traits.retries.defaultTimeoutMs === undefined ? '' : ` (default ${traits.retries.defaultTimeoutMs} ms)`}` : 'no retry or timeoutMs')
  return parts.join(' · ')
}

function section (nodeType: NodeTypeDescription): string {
  const schema = nodeType.configSchema as { properties: Record<string, FieldSchema>, required?: string[] }
  const rows = Object.entries(schema.properties).map(([field, property]) => {
    const { text, templated } = typeOf(property)
    const required = schema.required?.includes(field) === true ? 'yes' : ''
    const fallback = property.default === undefined ? '' : `\`${JSON.stringify(property.default)}\``
    return `| \`${field}\` | ${cell(text)}${templated ? ' (template)' : ''} | ${required} | ${cell(fallback)} | ${cell(property.description ?? '')} |`
  })
  return [
    `### \`${nodeType.type}\``,
    '',
    nodeType.description,
    '',
    traitsLine(nodeType),
    '',
    '| field | takes | required | default | what it is |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    `Example: \`${JSON.stringify(nodeType.example)}\``,
    ''
  ].join('\n')
}

export function nodeReferenceMarkdown (): string {
  const nodeTypes = describeNodeTypes()
  return [
    '# Node types',
    '',
    '<!-- Written by `pnpm docs:nodes` from packages/core/src/engine/nodes: edit the definitions, not this file. -->',
    '',
    `Every node type a workflow may use (${nodeTypes.length}), its config and its traits, as \`GET /api/automation/node-types\` gives them with each config's JSON Schema. A field marked (template) may be written as a template (README, Templates) and is checked once rendered. Adding a type is one file in \`packages/core/src/engine/nodes/\` and one entry in its catalogue (\`index.ts\`): a definition missing any part does not compile.`,
    '',
    ...nodeTypes.flatMap((nodeType, i) => nodeTypes[i - 1]?.category === nodeType.category ? [section(nodeType)] : [`## ${nodeType.category}\n`, section(nodeType)])
  ].join('\n')
}
