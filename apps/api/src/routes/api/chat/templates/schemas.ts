import { Type } from 'typebox'

/** A platform template record, with the fields the platform gives it (README, Chat). */
const Template = Type.Object({
  id: Type.String(),
  name: Type.String(),
  language: Type.String(),
  status: Type.String()
}, { additionalProperties: true })

export const Templates = Type.Array(Template)
