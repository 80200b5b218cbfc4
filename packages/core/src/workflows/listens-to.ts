import type { CancelOn, WorkflowNode } from '../db/schema/workflows.ts'

/**
 * The event names a workflow's runs may wait for or be cancelled by (README, Events and waits): its
 * wait_for_event nodes' and its cancelOn rules'. Stored with it (`workflows.listens_to`), they make
 * the events written only while someone listens (events/outbox.ts) written for a run about to wait.
 */
export function listensToOf (nodes: readonly WorkflowNode[], cancelOn: readonly CancelOn[] | null | undefined): string[] {
  const names = new Set<string>()
  for (const node of nodes) {
    if (node.type === 'wait_for_event' && typeof node.config?.event === 'string') names.add(node.config.event)
  }
  for (const rule of cancelOn ?? []) names.add(rule.event)
  return [...names].sort()
}
