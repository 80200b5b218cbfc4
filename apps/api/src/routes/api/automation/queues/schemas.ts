import { Type, type Static } from 'typebox'

const QueueCountersSchema = Type.Object({
  name: Type.String(),
  waiting: Type.Integer(),
  active: Type.Integer(),
  completed: Type.Integer(),
  failed: Type.Integer(),
  delayed: Type.Integer(),
  error: Type.Optional(Type.String())
})

export type QueueCounters = Static<typeof QueueCountersSchema>

export const QueueCounts = Type.Object({ queues: Type.Array(QueueCountersSchema) })
