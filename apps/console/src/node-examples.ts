import type { WorkflowNode } from './types.ts'

/**
 * A starting config for each node type the engine runs (contract, node types), so that a
 * new user builds a workflow from examples rather than from the API reference.
 */
export const NODE_EXAMPLES: Record<string, { config: Record<string, unknown>, about: string }> = {
  set: { config: { values: { greeting: 'Hello {{triggerData.name}}' } }, about: 'computes values from templates' },
  http_request: { config: { method: 'POST', url: 'https://example.com/hook', headers: {}, body: { event: '{{triggerData.event}}' } }, about: 'calls a URL' },
  condition: { config: { field: 'triggerData.amount', operator: 'gt', value: 100, then: '', else: '' }, about: 'branches: then / else, or cases' },
  wait: { config: { minutes: 5 }, about: 'pauses the run (seconds, minutes, hours, days or until)' },
  send_chat: { config: { phone: '{{triggerData.phone}}', text: 'Hi {{triggerData.name}}' }, about: 'sends a chat text' },
  send_chat_template: { config: { phone: '{{triggerData.phone}}', templateName: 'hello_world', lang: 'en_US' }, about: 'sends an approved template' },
  verify_signature: { config: { secret: 'replace-me', header: 'x-signature', algorithm: 'sha256', encoding: 'hex', prefix: 'sha256=' }, about: 'checks an inbound webhook’s HMAC' }
}

/** The nodes with one more of `type`, chained after the last node when that one leads nowhere yet. */
export function withNode (nodes: WorkflowNode[], type: string): WorkflowNode[] {
  const taken = new Set(nodes.map((node) => node.id))
  let n = nodes.length + 1
  while (taken.has(`n${n}`)) n++
  const added: WorkflowNode = { id: `n${n}`, type, config: structuredClone(NODE_EXAMPLES[type]?.config ?? {}) }
  const last = nodes.at(-1)
  if (last === undefined || last.next !== undefined || last.type === 'condition') return [...nodes, added]
  return [...nodes.slice(0, -1), { ...last, next: added.id }, added]
}
