import { Type } from 'typebox'
import { INTERACTIVE_LIMITS, MEDIA_KINDS, MEDIA_LIMITS } from '@switchboard/core/chat'

const text = (field: string, max: number) => Type.String({ minLength: 1, maxLength: max, errorMessage: `${field} must be 1 to ${max} characters` })

/**
 * A played customer's message (README, Sandbox numbers): exactly one of `text`, `interactive` (a tap on
 * a reply button or a list row the number sent) and `media` (its kind and what the platform tells of
 * it; there are no bytes), each within the platform's bounds. The route checks that exactly one is given.
 */
export const SandboxInboundBody = Type.Object({
  // A phone, or a platform user id: a customer whose phone the platform withholds (README, Customers known by username).
  from: Type.String({ pattern: '^(?:[0-9]{6,15}|[A-Z]{2}\\.(?:ENT\\.)?[A-Za-z0-9]{1,128})$', errorMessage: 'from must be a phone number in international format, digits only, or a platform user id' }),
  name: Type.Optional(text('name', 200)),
  username: Type.Optional(text('username', 64)),
  text: Type.Optional(text('text', 4096)),
  interactive: Type.Optional(Type.Object({
    type: Type.Union([Type.Literal('button_reply'), Type.Literal('list_reply')], { errorMessage: 'interactive.type must be one of button_reply, list_reply' }),
    id: text('interactive.id', INTERACTIVE_LIMITS.buttonId),
    title: text('interactive.title', INTERACTIVE_LIMITS.rowTitle),
    description: Type.Optional(text('interactive.description', INTERACTIVE_LIMITS.rowDescription))
  }, { additionalProperties: false })),
  media: Type.Optional(Type.Object({
    kind: Type.Enum(MEDIA_KINDS),
    mimeType: Type.Optional(Type.String({ pattern: '^[\\w!#$&^.+-]+/[\\w!#$&^.+-]+$', maxLength: 255, errorMessage: 'media.mimeType must be a media type such as image/jpeg' })),
    caption: Type.Optional(text('media.caption', MEDIA_LIMITS.caption)),
    filename: Type.Optional(text('media.filename', MEDIA_LIMITS.filename))
  }, { additionalProperties: false }))
}, { additionalProperties: false })

export const SandboxInboundAccepted = Type.Object({
  /** The played message's wamid: its conversation holds it once the worker has processed the delivery. */
  wamid: Type.String()
})
