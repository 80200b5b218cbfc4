import { Type } from 'typebox'
import { API_KEY_SCOPES } from '@switchboard/core/db'
import { MAX_KEY_WORKFLOWS } from '@switchboard/core/users'
import { NullableTimestamp, Pagination, Timestamp } from '../../../../schemas/common.ts'

export const CreateApiKeyBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100, errorMessage: 'name must be 1 to 100 characters' }),
  scopes: Type.Array(Type.Enum(API_KEY_SCOPES), { minItems: 1, maxItems: API_KEY_SCOPES.length * 2, description: 'What the key may do (README, API keys)' }),
  workflowIds: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
    maxItems: MAX_KEY_WORKFLOWS,
    description: 'The only workflows the key may see, fire and read the runs of; absent: all of its owner\'s'
  })),
  expiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'After it the key is refused (401); absent: it does not expire' }))
}, { additionalProperties: false })

export const ApiKey = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  name: Type.String(),
  hint: Type.String({ description: 'The key\'s first characters' }),
  scopes: Type.Array(Type.String()),
  workflowIds: Type.Union([Type.Array(Type.String()), Type.Null()]),
  expiresAt: NullableTimestamp,
  lastUsedAt: Type.Union([Timestamp, Type.Null()], { description: 'Within 10 seconds of its last use' }),
  revokedAt: NullableTimestamp,
  createdAt: Timestamp
})

export const CreatedApiKey = Type.Intersect([ApiKey, Type.Object({ key: Type.String({ description: 'The secret: shown this once, never again' }) })])

export const ListApiKeysQuery = Type.Object({ ...Pagination }, { additionalProperties: false })
