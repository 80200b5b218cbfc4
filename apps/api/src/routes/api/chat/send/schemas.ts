import { Type } from 'typebox'

/** Spec 2.7: the platform's body, passed through unchanged (unknown fields included). */
export const SendResult = Type.Object({
  messaging_product: Type.String(),
  contacts: Type.Optional(Type.Array(Type.Object({ input: Type.String(), wa_id: Type.String() }, { additionalProperties: true }))),
  messages: Type.Array(Type.Object({ id: Type.String() }, { additionalProperties: true }))
}, { additionalProperties: true })

const Phone = Type.String({ minLength: 1, maxLength: 32, errorMessage: 'to must be a phone number in international format' })
const AgentFields = {
  agentId: Type.Optional(Type.String({ maxLength: 200 })),
  agentName: Type.Optional(Type.String({ maxLength: 200 }))
}

export const SendTextBody = Type.Object({
  to: Phone,
  text: Type.String({ minLength: 1, maxLength: 4096, errorMessage: 'text must be 1 to 4096 characters' }),
  ...AgentFields,
  replyToId: Type.Optional(Type.String({ maxLength: 256 }))
}, { additionalProperties: false })

export const SendTemplateBody = Type.Object({
  to: Phone,
  templateName: Type.String({ minLength: 1, maxLength: 512, errorMessage: 'templateName must be 1 to 512 characters' }),
  lang: Type.Optional(Type.String({ pattern: '^[a-z]{2,3}(_[A-Z]{2})?$', errorMessage: 'lang must be a language code such as en_US or ar' })),
  components: Type.Optional(Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true }), { maxItems: 20 })),
  templateContent: Type.Optional(Type.Object({
    body: Type.Optional(Type.String({ maxLength: 4096 })),
    footer: Type.Optional(Type.String({ maxLength: 1024 })),
    imageUrl: Type.Optional(Type.String({ maxLength: 2048 }))
  }, { additionalProperties: false })),
  ...AgentFields
}, { additionalProperties: false })
