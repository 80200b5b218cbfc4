import { Type, type TInteger } from 'typebox'
import { DEFAULT_BROADCAST_RATE, MAX_BROADCAST_RATE, MAX_BROADCAST_RECIPIENTS, TEMPLATE_PARAMETER_LIMITS } from '@switchboard/core/chat'
import { BROADCAST_STATUSES } from '@switchboard/core/db'
import { BROADCAST_COUNT_STATUSES } from '@switchboard/core/db/values'
import { NullableTimestamp, Pagination, Timestamp } from '../../../../schemas/common.ts'

/** The template's parameters (README, Broadcasts): contact placeholders are rendered per recipient at send; core checks the rest. */
const Components = Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true }), {
  maxItems: TEMPLATE_PARAMETER_LIMITS.components,
  errorMessage: `components must hold at most ${TEMPLATE_PARAMETER_LIMITS.components} components`
})

export const CreateBroadcastBody = Type.Object({
  templateName: Type.String({ minLength: 1, maxLength: 512, errorMessage: 'templateName must be 1 to 512 characters' }),
  lang: Type.Optional(Type.String({ pattern: '^[a-z]{2,3}(_[A-Z]{2})?$', errorMessage: 'lang must be a language code such as en_US or ar' })),
  recipients: Type.Optional(Type.Array(Type.Object({
    to: Type.String({ minLength: 1, maxLength: 32 }),
    components: Type.Optional(Components)
  }, { additionalProperties: false }), {
    minItems: 1,
    maxItems: MAX_BROADCAST_RECIPIENTS,
    errorMessage: `recipients must hold 1 to ${MAX_BROADCAST_RECIPIENTS} recipients`
  })),
  label: Type.Optional(Type.String({ minLength: 1, maxLength: 50, errorMessage: 'label must be 1 to 50 characters' })),
  contactIds: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
    minItems: 1,
    maxItems: MAX_BROADCAST_RECIPIENTS,
    errorMessage: `contactIds must hold 1 to ${MAX_BROADCAST_RECIPIENTS} contact ids`
  })),
  /** The template's components for every contact of a label or contactIds audience (listed recipients carry their own). */
  components: Type.Optional(Components),
  ratePerSecond: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_BROADCAST_RATE, default: DEFAULT_BROADCAST_RATE, errorMessage: `ratePerSecond must be an integer from 1 to ${MAX_BROADCAST_RATE}` })),
  sendAt: Type.Optional(Type.String({ format: 'date-time', errorMessage: 'sendAt must be a date-time (ISO 8601)' }))
}, { additionalProperties: false })

const Counts = Type.Object(Object.fromEntries(BROADCAST_COUNT_STATUSES.map((status) => [status, Type.Integer()])) as Record<typeof BROADCAST_COUNT_STATUSES[number], TInteger>)

export const Broadcast = Type.Object({
  id: Type.String(),
  accountId: Type.String(),
  templateName: Type.String(),
  lang: Type.String(),
  ratePerSecond: Type.Integer(),
  sendAt: Timestamp,
  status: Type.Enum(BROADCAST_STATUSES),
  total: Type.Integer(),
  /** Sends started again after a worker stopped during them: each may have reached its customer twice. */
  repeated: Type.Integer(),
  counts: Counts,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  finishedAt: NullableTimestamp
})

export const BroadcastRecipient = Type.Object({
  position: Type.Integer(),
  phone: Type.String(),
  status: Type.Enum(BROADCAST_COUNT_STATUSES),
  attempts: Type.Integer(),
  wamid: Type.Union([Type.String(), Type.Null()]),
  error: Type.Union([Type.Object({ code: Type.Union([Type.Integer(), Type.Null()]), title: Type.String(), details: Type.Union([Type.String(), Type.Null()]) }), Type.Null()]),
  sentAt: NullableTimestamp
})

export const BroadcastsQuery = Type.Object({ ...Pagination })
export const RecipientsQuery = Type.Object({ status: Type.Optional(Type.Enum(BROADCAST_COUNT_STATUSES)), ...Pagination })
