import { Type } from 'typebox'
import { USER_ROLES } from '@switchboard/core/db'
import { NewPassword, Timestamp } from '../../../schemas/common.ts'

export const User = Type.Object({
  id: Type.String(),
  email: Type.String(),
  role: Type.String(),
  createdAt: Timestamp
})

const Role = Type.Enum(USER_ROLES)

export const CreateUserBody = Type.Object({
  email: Type.String({ format: 'email', maxLength: 320 }),
  password: NewPassword('password'),
  role: Type.Optional(Role)
}, { additionalProperties: false })

export const UpdateUserBody = Type.Object({
  role: Type.Optional(Role),
  password: Type.Optional(NewPassword('password'))
}, { additionalProperties: false })
