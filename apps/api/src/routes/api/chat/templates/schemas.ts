import { Type } from 'typebox'
import {
  TEMPLATE_BUTTON_TYPES, TEMPLATE_COMPONENT_TYPES, TEMPLATE_HEADER_FORMATS, TEMPLATE_LANGUAGE_PATTERN, TEMPLATE_LIMITS as LIMITS, TEMPLATE_NAME_PATTERN
} from '@switchboard/core/chat'
import { TEMPLATE_CATEGORIES, TEMPLATE_QUALITIES, TEMPLATE_STATUSES } from '@switchboard/core/db/values'
import { Pagination, Timestamp } from '../../../../schemas/common.ts'

/** A platform template record, with the fields the platform gives it (README, Chat). */
const Template = Type.Object({
  id: Type.String(),
  name: Type.String(),
  language: Type.String(),
  status: Type.String()
}, { additionalProperties: true })

export const Templates = Type.Array(Template)

/** A template made here, with what the platform's review said of it (README, Chat: templates). */
export const StoredTemplate = Type.Object({
  id: Type.String({ description: 'The platform\'s id of the template' }),
  name: Type.String(),
  language: Type.String(),
  category: Type.Enum(TEMPLATE_CATEGORIES),
  components: Type.Array(Type.Unknown()),
  status: Type.Enum(TEMPLATE_STATUSES),
  reason: Type.Union([Type.String(), Type.Null()]),
  quality: Type.Union([Type.Enum(TEMPLATE_QUALITIES), Type.Null()]),
  createdAt: Timestamp,
  updatedAt: Timestamp
})

/** Without `status`, the live list of approved templates (the spec's); with it, the stored ones, paged by `limit` and `offset`. */
export const TemplatesQuery = Type.Object({
  status: Type.Optional(Type.Enum(['all', ...TEMPLATE_STATUSES] as const)),
  ...Pagination
})

export const TemplatesAnswer = Type.Union([Templates, Type.Array(StoredTemplate)])

export const TemplateNameParams = Type.Object({ name: Type.String() })

const ExampleValue = Type.String({ maxLength: LIMITS.exampleValue })
// On each branch: a union's own message is never the first error the validator reports.
const BUTTON_EXAMPLE = 'buttons[].example must be the code of a COPY_CODE button, or [the URL filled in] of a URL button'

/**
 * The shape and the sizes the platform's rules allow at most, so that nothing larger is read;
 * core's `checkTemplate` checks every rule, each component by its type.
 */
const Button = Type.Object({
  type: Type.Enum(TEMPLATE_BUTTON_TYPES),
  text: Type.Optional(Type.String({ maxLength: LIMITS.buttonText })),
  url: Type.Optional(Type.String({ maxLength: LIMITS.url })),
  phone_number: Type.Optional(Type.String({ maxLength: LIMITS.phoneNumber })),
  example: Type.Optional(Type.Union([
    Type.String({ maxLength: LIMITS.exampleValue, errorMessage: BUTTON_EXAMPLE }),
    Type.Array(ExampleValue, { maxItems: 1, errorMessage: BUTTON_EXAMPLE })
  ]))
}, { additionalProperties: false })

const Component = Type.Object({
  type: Type.Enum(TEMPLATE_COMPONENT_TYPES),
  format: Type.Optional(Type.Enum(TEMPLATE_HEADER_FORMATS)),
  text: Type.Optional(Type.String({
    maxLength: LIMITS.bodyText,
    errorMessage: `components[].text must be 1 to ${LIMITS.bodyText} characters (a BODY; a HEADER or FOOTER: 1 to ${LIMITS.headerText})`
  })),
  example: Type.Optional(Type.Object({
    header_text: Type.Optional(Type.Array(ExampleValue, { maxItems: LIMITS.headerVariables })),
    header_handle: Type.Optional(Type.Array(ExampleValue, { maxItems: 1 })),
    body_text: Type.Optional(Type.Array(Type.Array(ExampleValue), { maxItems: 1 }))
  }, { additionalProperties: false })),
  buttons: Type.Optional(Type.Array(Button, { maxItems: LIMITS.buttons, errorMessage: `buttons must hold 1 to ${LIMITS.buttons} buttons` }))
}, { additionalProperties: false })

export const CreateTemplateBody = Type.Object({
  name: Type.String({
    minLength: 1,
    maxLength: LIMITS.name,
    pattern: TEMPLATE_NAME_PATTERN,
    errorMessage: `name must be 1 to ${LIMITS.name} lowercase letters, digits and underscores`
  }),
  language: Type.String({ pattern: TEMPLATE_LANGUAGE_PATTERN, errorMessage: 'language must be a language code such as en_US or ar' }),
  category: Type.Enum(TEMPLATE_CATEGORIES),
  components: Type.Array(Component, {
    minItems: 1,
    maxItems: TEMPLATE_COMPONENT_TYPES.length,
    errorMessage: `components must hold a BODY and at most one ${TEMPLATE_COMPONENT_TYPES.join(', ')} each`
  })
}, { additionalProperties: false })
