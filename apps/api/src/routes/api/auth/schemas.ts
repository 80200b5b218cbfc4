import { Type } from 'typebox'

export const LoginBody = Type.Object({
  email: Type.Optional(Type.String({ maxLength: 320 })),
  password: Type.Optional(Type.String({ maxLength: 1024 }))
}, { additionalProperties: false })

const PublicUser = Type.Object({
  id: Type.String(),
  email: Type.String(),
  role: Type.String()
})

export const LoginResponse = Type.Object({ token: Type.String(), user: PublicUser })
