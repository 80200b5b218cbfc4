import { Type } from 'typebox'

/** A platform template record, as the platform describes it (spec 2.8 leaves the fields to the platform). */
const Template = Type.Object({
  id: Type.String(),
  name: Type.String(),
  language: Type.String(),
  status: Type.String()
}, { additionalProperties: true })

export const Templates = Type.Array(Template)
