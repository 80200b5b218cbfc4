import type { WorkflowInput } from './client.ts'

/** The node of ORDER_STATUS_TOOL that answers: the order from the call's arguments, shipped. */
const ORDER_STATUS_LOOKUP = { id: 'lookup', type: 'set', config: { values: { order: '{{triggerData.arguments.orderId}}', status: 'shipped' } } }

/**
 * The AGENT workflow "Order status" the assistant's, ai_agent's and bench R's tests call as a
 * tool (`order_status` to a model): `before` runs ahead of its lookup (a wait, for a test that
 * holds the tool's run).
 */
export const orderStatusTool = (before: Array<Record<string, unknown>> = []): WorkflowInput => ({
  name: 'Order status',
  triggerType: 'AGENT',
  triggerConfig: {
    description: 'Looks up the status of an order by its number',
    inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] }
  },
  nodes: [...before, ORDER_STATUS_LOOKUP]
})
