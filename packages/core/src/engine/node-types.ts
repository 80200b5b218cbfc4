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
