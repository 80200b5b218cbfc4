import { Type } from 'typebox'

export const Check = Type.Object({
  status: Type.String(),
  checks: Type.Optional(Type.Record(Type.String(), Type.String())),
  /** What is on and off, for people: not part of readiness. */
  details: Type.Optional(Type.Record(Type.String(), Type.String()))
})
