import { Type } from 'typebox'
import { CONSENT_BOUNDS } from '@switchboard/core/chat'
import { NullableTimestamp } from '../../../../schemas/common.ts'

const Keywords = (field: string) => Type.Array(Type.String({ minLength: 1, maxLength: CONSENT_BOUNDS.keywordChars }), {
  minItems: 1,
  maxItems: CONSENT_BOUNDS.keywords,
  errorMessage: `${field} must be 1 to ${CONSENT_BOUNDS.keywords} keywords of 1 to ${CONSENT_BOUNDS.keywordChars} characters`
})
const Confirmation = (field: string) => Type.String({
  minLength: 1,
  maxLength: CONSENT_BOUNDS.confirmationChars,
  errorMessage: `${field} must be 1 to ${CONSENT_BOUNDS.confirmationChars} characters`
})

/** A field left out takes its default (README, Contacts and consent). */
export const ConsentSettingsBody = Type.Object({
  optOutKeywords: Type.Optional(Keywords('optOutKeywords')),
  optInKeywords: Type.Optional(Keywords('optInKeywords')),
  optOutConfirmation: Type.Optional(Confirmation('optOutConfirmation')),
  optInConfirmation: Type.Optional(Confirmation('optInConfirmation'))
}, { additionalProperties: false })

export const ConsentSettingsView = Type.Object({
  /** As they are matched: trimmed, spaces collapsed, upper case. */
  optOutKeywords: Type.Array(Type.String()),
  optInKeywords: Type.Array(Type.String()),
  optOutConfirmation: Type.String(),
  optInConfirmation: Type.String(),
  /** Null while the number uses the defaults. */
  updatedAt: NullableTimestamp
})
