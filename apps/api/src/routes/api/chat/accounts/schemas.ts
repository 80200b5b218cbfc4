import { Type } from 'typebox'
import { Pagination, Timestamp } from '../../../../schemas/common.ts'

export const ChatAccount = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  name: Type.String(),
  phoneNumberId: Type.String(),
  businessAccountId: Type.Union([Type.String(), Type.Null()]),
  displayPhoneNumber: Type.Union([Type.String(), Type.Null()]),
  isDefault: Type.Boolean(),
  /** A sandbox number (README, Sandbox numbers): no platform behind it. */
  sandbox: Type.Boolean(),
  createdAt: Timestamp
})

const fields = {
  name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', errorMessage: 'name must be 1 to 200 characters' }),
  phoneNumberId: Type.String({ pattern: '^[0-9]{1,64}$', errorMessage: 'phoneNumberId must be the platform phone number id (digits)' }),
  businessAccountId: Type.Union([Type.String({ pattern: '^[0-9]{1,64}$' }), Type.Null()], { errorMessage: 'businessAccountId must be the platform business account id (digits)' }),
  displayPhoneNumber: Type.Union([Type.String({ maxLength: 32 }), Type.Null()]),
  accessToken: Type.String({ minLength: 1, maxLength: 4096, errorMessage: 'accessToken must be 1 to 4096 characters' }),
  isDefault: Type.Boolean()
}

/** `phoneNumberId` and `accessToken` are required of a platform number (the route says so), and not for a sandbox one. */
export const CreateChatAccountBody = Type.Object({
  name: fields.name,
  sandbox: Type.Optional(Type.Boolean()),
  phoneNumberId: Type.Optional(fields.phoneNumberId),
  accessToken: Type.Optional(fields.accessToken),
  businessAccountId: Type.Optional(fields.businessAccountId),
  displayPhoneNumber: Type.Optional(fields.displayPhoneNumber),
  isDefault: Type.Optional(fields.isDefault)
}, { additionalProperties: false })

export const UpdateChatAccountBody = Type.Partial(Type.Object(fields), { additionalProperties: false })

export const ListChatAccountsQuery = Type.Object(Pagination)
