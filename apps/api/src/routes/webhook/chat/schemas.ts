import { Type } from 'typebox'

export const VerifyQuery = Type.Object({
  'hub.mode': Type.Optional(Type.String()),
  'hub.verify_token': Type.Optional(Type.String()),
  'hub.challenge': Type.Optional(Type.String({ maxLength: 1024 }))
})

export const Challenge = Type.String()

export const Received = Type.Object({ status: Type.Literal('received') })
