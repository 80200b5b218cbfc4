import { Type } from 'typebox'
import { CANNED_REPLY_BOUNDS, CANNED_REPLY_SHORTCUT } from '@switchboard/core/chat'
import { Pagination, Timestamp } from '../../../../schemas/common.ts'

export const CannedReply = Type.Object({
  id: Type.String(),
  /** Typed after `/` in the inbox's reply box. */
  shortcut: Type.String(),
  title: Type.String(),
  text: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp
})

export const CannedRepliesQuery = Type.Object({ ...Pagination })

const fields = {
  shortcut: Type.String({
    pattern: CANNED_REPLY_SHORTCUT,
    errorMessage: `shortcut must be 1 to ${CANNED_REPLY_BOUNDS.shortcutChars} lower-case letters, digits, _ or -`
  }),
  title: Type.String({ minLength: 1, maxLength: CANNED_REPLY_BOUNDS.titleChars, errorMessage: `title must be 1 to ${CANNED_REPLY_BOUNDS.titleChars} characters` }),
  text: Type.String({ minLength: 1, maxLength: CANNED_REPLY_BOUNDS.textChars, errorMessage: `text must be 1 to ${CANNED_REPLY_BOUNDS.textChars} characters` })
}

export const NewCannedReplyBody = Type.Object(fields, { additionalProperties: false })

export const UpdateCannedReplyBody = Type.Object({
  shortcut: Type.Optional(fields.shortcut),
  title: Type.Optional(fields.title),
  text: Type.Optional(fields.text)
}, { additionalProperties: false })
