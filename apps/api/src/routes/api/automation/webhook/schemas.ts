import { Type } from 'typebox'

export const WebhookParams = Type.Object({ workflowId: Type.String() })

export const WebhookAnswer = Type.Object({
  status: Type.Union([Type.Literal('received'), Type.Literal('ignored')]),
  runId: Type.Optional(Type.String())
})
