import { Type } from 'typebox'
import { LABEL_BOUNDS } from '@switchboard/core/chat'
import { Pagination } from '../../../../schemas/common.ts'

/** A label as conversations and contacts carry it (README, The team inbox: labels). */
export const Label = Type.String({
  minLength: 1,
  maxLength: LABEL_BOUNDS.chars,
  errorMessage: `label must be 1 to ${LABEL_BOUNDS.chars} characters`
})

/** A label added to a conversation or a contact. */
export const LabelBody = Type.Object({ label: Label }, { additionalProperties: false })

/** A label removed from a conversation or a contact: `/:id/labels/:label`, the label URL-encoded. */
export const LabelParams = Type.Object({ id: Type.String(), label: Label })

export const LabelCount = Type.Object({
  name: Type.String(),
  /** The number's conversations carrying it, archived ones too. */
  conversations: Type.Integer(),
  /** The number's contacts carrying it. */
  contacts: Type.Integer()
})

export const LabelsQuery = Type.Object({ ...Pagination })
