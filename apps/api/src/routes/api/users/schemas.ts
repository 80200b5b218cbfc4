import { Type } from 'typebox'
import { USER_ROLES } from '@switchboard/core/db'
import { Timestamp } from '../../../schemas/common.ts'

export const User = Type.Object({
  id: Type.String(),
  email: Type.String(),
  role: Type.String(),
  createdAt: Timestamp
})

export const CreateUserBody = Type.Object({
  email: Type.String({ format: 'email', maxLength: 320 }),
  password: Type.String({ minLength: 8, maxLength: 1024 }),
  role: Type.Optional(Type.Union(USER_ROLES.map((role) => Type.Literal(role)), { errorMessage: 'role must be one of admin, member' }))
}, { additionalProperties: false })
