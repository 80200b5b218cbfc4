import { Type } from 'typebox'

export const EmitEventBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200, errorMessage: 'name must be a string of 1 to 200 characters' }),
  payload: Type.Optional(Type.Unknown())
})

export const EventRuns = Type.Object({ runIds: Type.Array(Type.String()) })
