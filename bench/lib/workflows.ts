import type { Stack } from './stack.ts'

interface BenchNode { id: string, type: string, config: Record<string, unknown>, next?: string }

/**
 * `length` pure nodes in a chain, `set` and `condition` in turn: each `set` renders a template
 * from the trigger data, each `condition` tests the value the `set` before it wrote.
 */
export function pureChain (length: number): BenchNode[] {
  return Array.from({ length }, (_, i) => {
    const next = i < length - 1 ? `n${i + 1}` : undefined
    if (i % 2 === 1) {
      return { id: `n${i}`, type: 'condition', config: { field: `n${i - 1}.value`, operator: 'exists', ...(next !== undefined && { then: next, else: next }) } }
    }
    return { id: `n${i}`, type: 'set', config: { values: { value: '{{triggerData.n}}' } }, ...(next !== undefined && { next }) }
  })
}

/**
 * A chain of `length` small code nodes (README, Code), each reading the one before: what one code
 * node costs, the hop to a sandbox thread and a fresh QuickJS runtime included.
 */
export function codeChain (length: number): BenchNode[] {
  return Array.from({ length }, (_, i) => ({
    id: `c${i}`,
    type: 'code',
    config: { code: i === 0 ? 'return { value: input.triggerData.n }' : `return { value: input.c${i - 1}.value + 1 }` },
    ...(i < length - 1 && { next: `c${i + 1}` })
  }))
}

/** Scenario A's workflow: one `set` node reading the webhook body. */
export const oneSetNode = (): BenchNode[] => [{ id: 'n1', type: 'set', config: { values: { orderId: '{{triggerData.body.data.id}}' } } }]

/** Creates an active workflow as the admin and returns its id. */
export async function createWorkflow (stack: Stack, name: string, triggerType: 'MANUAL' | 'WEBHOOK', nodes: unknown[]): Promise<string> {
  return stack.client.createWorkflow(await stack.adminToken(), { name, triggerType, isActive: true, nodes })
}

/** Scenario lengths: full runs, or short ones for development (`--quick`). */
export const seconds = (quick: boolean, full: number, short: number): number => quick ? short : full
