import { Type } from 'typebox'
import { CONTACT_BOUNDS } from '@switchboard/core/chat'
import { NullableTimestamp, Pagination, Timestamp } from '../../../../schemas/common.ts'

const Labels = Type.Array(Type.String({ minLength: 1, maxLength: CONTACT_BOUNDS.labelChars }), {
  maxItems: CONTACT_BOUNDS.labels,
  errorMessage: `labels must be at most ${CONTACT_BOUNDS.labels} labels of 1 to ${CONTACT_BOUNDS.labelChars} characters`
})

export const Contact = Type.Object({
  id: Type.String(),
  /** "" when the platform withholds it (README, Customers known by username). */
  phone: Type.String(),
  platformUserId: Type.Union([Type.String(), Type.Null()]),
  parentPlatformUserId: Type.Union([Type.String(), Type.Null()]),
  username: Type.Union([Type.String(), Type.Null()]),
  name: Type.Union([Type.String(), Type.Null()]),
  labels: Type.Array(Type.String()),
  attributes: Type.Record(Type.String(), Type.String()),
  optedOut: Type.Boolean(),
  /** When optedOut was last set: a keyword's message time, or when staff or an import set it. */
  consentChangedAt: NullableTimestamp,
  /** How: `keyword`, `staff` or `import`; null while it never changed. */
  consentSource: Type.Union([Type.String(), Type.Null()]),
  createdAt: Timestamp,
  updatedAt: Timestamp
})

export const ContactsQuery = Type.Object({
  optedOut: Type.Optional(Type.Boolean()),
  /** Contacts carrying this label. */
  label: Type.Optional(Type.String({ minLength: 1, maxLength: CONTACT_BOUNDS.labelChars })),
  /** A prefix of the phone (its digits: `+1 555` finds 1555…) or of the name, any case. */
  search: Type.Optional(Type.String({ maxLength: CONTACT_BOUNDS.searchChars })),
  ...Pagination
})

/** Attributes are replaced whole; their names are checked by the route (letters, digits, `_`, `-`, `.`). */
export const UpdateContactBody = Type.Object({
  name: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: CONTACT_BOUNDS.nameChars, errorMessage: `name must be 1 to ${CONTACT_BOUNDS.nameChars} characters` }), Type.Null()])),
  labels: Type.Optional(Labels),
  attributes: Type.Optional(Type.Record(
    Type.String({ minLength: 1, maxLength: CONTACT_BOUNDS.attributeNameChars }),
    Type.String({ maxLength: CONTACT_BOUNDS.attributeValueChars }),
    { maxProperties: CONTACT_BOUNDS.attributes, errorMessage: `attributes must be at most ${CONTACT_BOUNDS.attributes} names of 1 to ${CONTACT_BOUNDS.attributeNameChars} characters with text values of at most ${CONTACT_BOUNDS.attributeValueChars}` }
  )),
  optedOut: Type.Optional(Type.Boolean())
}, { additionalProperties: false })

export const ContactsImportResult = Type.Object({
  /** Rows that added a contact. */
  imported: Type.Integer(),
  /** Rows that changed a contact already there. */
  updated: Type.Integer(),
  /** The first skipped rows with their reason; `skippedCount` counts them all. */
  skipped: Type.Array(Type.Object({ line: Type.Integer(), reason: Type.String() })),
  skippedCount: Type.Integer(),
  /** Columns of the file that are none of phone, name, labels, optedOut, attr.<name>. */
  ignoredColumns: Type.Array(Type.String())
})
