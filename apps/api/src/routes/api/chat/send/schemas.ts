import { Type } from 'typebox'
import { FLOW_ACTIONS, INTERACTIVE_LIMITS as LIMITS, INTERACTIVE_TYPES, KIND_LIMITS, MEDIA_KINDS, MEDIA_LIMITS, TEMPLATE_PARAMETER_LIMITS } from '@switchboard/core/chat'

/** The platform's body, passed through unchanged, unknown fields included (README, Chat). */
export const SendResult = Type.Object({
  messaging_product: Type.String(),
  contacts: Type.Optional(Type.Array(Type.Object({ input: Type.String(), wa_id: Type.Optional(Type.String()), user_id: Type.Optional(Type.String()) }, { additionalProperties: true }))),
  messages: Type.Array(Type.Object({ id: Type.String() }, { additionalProperties: true }))
}, { additionalProperties: true })

/**
 * `to` (a phone, or a platform user id) or `contactId` (README, Customers known by username); neither
 * is `to is required`, both a 400 too (core's `addressFor`).
 */
const RecipientFields = {
  to: Type.Optional(Type.String({ minLength: 1, maxLength: 140, errorMessage: 'to must be a phone number in international format' })),
  contactId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, errorMessage: 'contactId must be a contact id' }))
}
const AgentFields = {
  agentId: Type.Optional(Type.String({ maxLength: 200 })),
  agentName: Type.Optional(Type.String({ maxLength: 200 }))
}

export const SendTextBody = Type.Object({
  ...RecipientFields,
  text: Type.String({ minLength: 1, maxLength: 4096, errorMessage: 'text must be 1 to 4096 characters' }),
  ...AgentFields,
  replyToId: Type.Optional(Type.String({ maxLength: 256 }))
}, { additionalProperties: false })

export const SendTemplateBody = Type.Object({
  ...RecipientFields,
  templateName: Type.String({ minLength: 1, maxLength: 512, errorMessage: 'templateName must be 1 to 512 characters' }),
  lang: Type.Optional(Type.String({ pattern: '^[a-z]{2,3}(_[A-Z]{2})?$', errorMessage: 'lang must be a language code such as en_US or ar' })),
  /** In the platform's wire format (README, Chat: template parameters); core's `checkTemplateComponents` names what is wrong. */
  components: Type.Optional(Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true }), {
    maxItems: TEMPLATE_PARAMETER_LIMITS.components,
    errorMessage: `components must hold at most ${TEMPLATE_PARAMETER_LIMITS.components} components`
  })),
  templateContent: Type.Optional(Type.Object({
    body: Type.Optional(Type.String({ maxLength: 4096 })),
    footer: Type.Optional(Type.String({ maxLength: 1024 })),
    imageUrl: Type.Optional(Type.String({ maxLength: 2048 }))
  }, { additionalProperties: false })),
  ...AgentFields
}, { additionalProperties: false })

/** One of link and mediaId, caption where the platform shows one, filename for documents: core's `checkMediaSend` names what is wrong. */
export const SendMediaBody = Type.Object({
  ...RecipientFields,
  kind: Type.Enum(MEDIA_KINDS),
  link: Type.Optional(Type.String({ maxLength: MEDIA_LIMITS.link, errorMessage: `link must be an https URL of at most ${MEDIA_LIMITS.link} characters` })),
  mediaId: Type.Optional(Type.String({ maxLength: MEDIA_LIMITS.mediaId, errorMessage: `mediaId must be 1 to ${MEDIA_LIMITS.mediaId} characters` })),
  caption: Type.Optional(Type.String({ maxLength: MEDIA_LIMITS.caption, errorMessage: `caption must be 1 to ${MEDIA_LIMITS.caption} characters` })),
  filename: Type.Optional(Type.String({ maxLength: MEDIA_LIMITS.filename, errorMessage: `filename must be 1 to ${MEDIA_LIMITS.filename} characters` })),
  ...AgentFields
}, { additionalProperties: false })

const text = (field: string, max: number) => Type.String({ maxLength: max, errorMessage: `${field} must be 1 to ${max} characters` })
// Nested, the validator's own message names the field with its index: `buttons[3].title must NOT have more than 20 characters`.
const bounded = (max: number) => Type.String({ maxLength: max })

/**
 * The platform's limits, as the schema can say them; core's `checkInteractive` adds what it cannot
 * (10 rows in all, unique ids, buttons for type button, list for type list and flow for type flow, a
 * flow's id or name, its data's size and depth).
 */
export const SendInteractiveBody = Type.Object({
  ...RecipientFields,
  type: Type.Enum(INTERACTIVE_TYPES),
  body: text('body', LIMITS.body),
  header: Type.Optional(text('header', LIMITS.header)),
  footer: Type.Optional(text('footer', LIMITS.footer)),
  buttons: Type.Optional(Type.Array(Type.Object({
    id: bounded(LIMITS.buttonId),
    title: bounded(LIMITS.buttonTitle)
  }), { maxItems: LIMITS.buttons, errorMessage: `buttons must hold 1 to ${LIMITS.buttons} buttons` })),
  list: Type.Optional(Type.Object({
    button: bounded(LIMITS.listButton),
    sections: Type.Array(Type.Object({
      title: Type.Optional(bounded(LIMITS.sectionTitle)),
      rows: Type.Array(Type.Object({
        id: bounded(LIMITS.rowId),
        title: bounded(LIMITS.rowTitle),
        description: Type.Optional(bounded(LIMITS.rowDescription))
      }), { maxItems: LIMITS.rows, errorMessage: `list.sections must hold at most ${LIMITS.rows} rows in all` })
    }), { maxItems: LIMITS.sections, errorMessage: `list.sections must hold 1 to ${LIMITS.sections} sections` })
  })),
  flow: Type.Optional(Type.Object({
    id: Type.Optional(bounded(LIMITS.flowId)),
    name: Type.Optional(bounded(LIMITS.flowName)),
    cta: bounded(LIMITS.flowCta),
    screen: Type.Optional(bounded(LIMITS.flowScreen)),
    data: Type.Optional(Type.Object({}, { additionalProperties: true, errorMessage: 'flow.data must be a non-empty object' })),
    token: Type.Optional(bounded(LIMITS.flowToken)),
    action: Type.Optional(Type.Enum(FLOW_ACTIONS))
  }, { additionalProperties: false })),
  ...AgentFields
}, { additionalProperties: false })

/** A place (README, Message kinds): degrees as the platform takes them, our bounds on the texts. */
export const SendLocationBody = Type.Object({
  ...RecipientFields,
  latitude: Type.Number({ minimum: -90, maximum: 90, errorMessage: 'latitude must be a number from -90 to 90' }),
  longitude: Type.Number({ minimum: -180, maximum: 180, errorMessage: 'longitude must be a number from -180 to 180' }),
  name: Type.Optional(text('name', KIND_LIMITS.locationName)),
  address: Type.Optional(text('address', KIND_LIMITS.locationAddress)),
  ...AgentFields
}, { additionalProperties: false })

const cardField = Type.String({ minLength: 1, maxLength: KIND_LIMITS.cardField })
const cardPart = (fields: readonly string[], required?: string) =>
  Type.Object(Object.fromEntries(fields.map((field) => [field, field === required ? cardField : Type.Optional(cardField)])), { additionalProperties: false })
const cardList = (fields: readonly string[]) => Type.Array(cardPart(fields), { maxItems: KIND_LIMITS.cardEntries })

/** Contact cards in the platform's format; each needs `name.formatted_name`. Every count and length is bounded (README, Message kinds). */
export const SendContactsBody = Type.Object({
  ...RecipientFields,
  contacts: Type.Array(Type.Object({
    name: cardPart(['formatted_name', 'first_name', 'last_name', 'middle_name', 'suffix', 'prefix'], 'formatted_name'),
    org: Type.Optional(cardPart(['company', 'department', 'title'])),
    phones: Type.Optional(cardList(['phone', 'wa_id', 'type'])),
    emails: Type.Optional(cardList(['email', 'type'])),
    urls: Type.Optional(cardList(['url', 'type'])),
    addresses: Type.Optional(cardList(['street', 'city', 'state', 'zip', 'country', 'country_code', 'type'])),
    birthday: Type.Optional(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' }))
  }, { additionalProperties: false }), { minItems: 1, maxItems: KIND_LIMITS.contacts, errorMessage: `contacts must hold 1 to ${KIND_LIMITS.contacts} cards` }),
  ...AgentFields
}, { additionalProperties: false })
