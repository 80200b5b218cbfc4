import { Type } from 'typebox'
import { NewPassword } from '../../../schemas/common.ts'

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

/** The current password proves it is the user, not someone at their unlocked screen. */
export const ChangePasswordBody = Type.Object({
  currentPassword: Type.String({ minLength: 1, maxLength: 1024, errorMessage: 'currentPassword is required' }),
  newPassword: NewPassword('newPassword')
}, { additionalProperties: false })
