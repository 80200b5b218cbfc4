import { Type } from 'typebox'
import { CREDENTIAL_TYPES } from '@switchboard/core/db'
import { Pagination, Timestamp } from '../../../../schemas/common.ts'

const CredentialType = Type.Enum(CREDENTIAL_TYPES)

/** A name is the template path segment of `{{credentials.<name>.<field>}}`: no dots, braces or spaces. */
const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^[A-Za-z0-9][A-Za-z0-9_-]*$',
  errorMessage: 'name must be 1 to 200 letters, digits, _ and -, starting with a letter or digit'
})

/** Checked per type by core (credentials/data.ts), whose messages name the field. */
const Data = Type.Unsafe<Record<string, unknown>>(Type.Object({}, {
  additionalProperties: true,
  maxProperties: 20,
  description: 'write-only. bearer: token; basic: username, password; header: name, value; hmac: secret; mcp: url (http or https, at most 2048 characters) and optional headers (the text of a JSON object of 1 to 20 header names to values); generic: 1 to 20 fields of your own. Values are strings of 1 to 8192 characters.'
}))

/** Never the data: the names of its fields, for `{{credentials.<name>.<field>}}`. */
export const Credential = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: CredentialType,
  fields: Type.Array(Type.String()),
  createdAt: Timestamp,
  updatedAt: Timestamp
})

/** The property order is the order of the checks: name, type, data. */
export const CreateCredentialBody = Type.Object({
  name: Name,
  type: CredentialType,
  data: Data
}, { additionalProperties: false })

/** The type never changes; `data` replaces every field. */
export const UpdateCredentialBody = Type.Object({
  name: Type.Optional(Name),
  data: Type.Optional(Data)
}, { additionalProperties: false })

export const ListCredentialsQuery = Type.Object({ ...Pagination }, { additionalProperties: false })
