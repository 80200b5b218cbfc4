import { Type } from 'typebox'

export const McpMessage = Type.Unknown({ description: 'A JSON-RPC message of the Model Context Protocol (or a batch of them)' })

/** What the transport answers a request with: the SDK writes it, so it is described, not serialized. */
export const McpAnswer = {
  // Not declared as text/event-stream, which marks the streams that never end (the inbox's events): this one ends with its answer.
  description: 'The JSON-RPC answer: a text/event-stream of progress notifications, then the result (the transport\'s default), or JSON',
  content: { 'application/json': { schema: Type.Unknown() } }
}
