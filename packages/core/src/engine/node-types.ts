/** Every node type the engine runs (contract, "Node types"); one executor per type in ./nodes. */
export const NODE_TYPES = [
  'send_chat',
  'send_chat_template',
  'http_request',
  'condition',
  'wait',
  'set',
  'verify_signature'
] as const

export type NodeType = typeof NODE_TYPES[number]

export const isNodeType = (type: string): type is NodeType => (NODE_TYPES as readonly string[]).includes(type)

/**
 * Node types without an outside effect: deterministic, given the run's result
 * and trigger, so the engine runs them in memory between checkpoints and a
 * crash re-runs them. Any other type is checkpointed before it acts and after it.
 */
const PURE_NODE_TYPES: ReadonlySet<string> = new Set<NodeType>(['set', 'condition', 'verify_signature'])

export const isPureNodeType = (type: string): boolean => PURE_NODE_TYPES.has(type)

/**
 * Node types that write the checkpoint before their outside effect themselves (`beforeEffect`)
 * before they act: a run that reaches one unclaimed (its pure nodes ran in memory) is claimed
 * by that checkpoint.
 */
const RECORDING_NODE_TYPES: ReadonlySet<string> = new Set<NodeType>(['http_request', 'send_chat', 'send_chat_template'])

export const recordsBeforeEffect = (type: string): boolean => RECORDING_NODE_TYPES.has(type)
