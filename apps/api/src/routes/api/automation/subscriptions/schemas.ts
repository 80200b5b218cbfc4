import { Type } from 'typebox'
import { DELIVERY_STATUSES } from '@switchboard/core/db'
import { EVENT_CATALOGUE, SUBSCRIPTION_URL_MAX } from '@switchboard/core/subscriptions'
import { NullableTimestamp, Pagination, Timestamp } from '../../../../schemas/common.ts'

/** Checked against the catalogue by core, whose message names an unknown event. */
const Events = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: EVENT_CATALOGUE.length,
  errorMessage: `events must list 1 to ${EVENT_CATALOGUE.length} of ${EVENT_CATALOGUE.join(', ')}`
})

/** Its host is checked by core (the SSRF guard of http_request). */
const Url = Type.String({ minLength: 1, maxLength: SUBSCRIPTION_URL_MAX, errorMessage: `url must be an http or https URL of at most ${SUBSCRIPTION_URL_MAX} characters` })

const DeliveryStatus = Type.Enum(DELIVERY_STATUSES)

/** Never the secret: it is shown once, when the subscription is created. */
export const Subscription = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabledReason: Type.Union([Type.String(), Type.Null()]),
  consecutiveFailures: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp
})

export const CreatedSubscription = Type.Intersect([Subscription, Type.Object({
  secret: Type.String({ description: 'The signing secret (Standard Webhooks, whsec_…): in this answer only.' })
})])

export const CreateSubscriptionBody = Type.Object({
  url: Url,
  events: Events,
  secret: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'whsec_ and the base64 of 24 to 64 bytes; one is generated when none is given' }))
}, { additionalProperties: false })

/** Enabling again clears why it was disabled and its count of failures. */
export const UpdateSubscriptionBody = Type.Object({
  url: Type.Optional(Url),
  events: Type.Optional(Events),
  enabled: Type.Optional(Type.Boolean())
}, { additionalProperties: false })

export const ListSubscriptionsQuery = Type.Object({ ...Pagination }, { additionalProperties: false })

export const Delivery = Type.Object({
  id: Type.String({ description: 'The webhook-id of every attempt and replay' }),
  subscriptionId: Type.String(),
  eventId: Type.String(),
  eventName: Type.String(),
  payload: Type.Unknown(),
  status: DeliveryStatus,
  attempts: Type.Integer({ description: 'Attempts since it was created or last replayed' }),
  nextAttemptAt: NullableTimestamp,
  createdAt: Timestamp,
  completedAt: NullableTimestamp
})

export const DeliveryAttempt = Type.Object({
  id: Type.String(),
  at: Timestamp,
  statusCode: Type.Union([Type.Integer(), Type.Null()]),
  latencyMs: Type.Integer(),
  responseExcerpt: Type.Union([Type.String(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()])
})

export const DeliveryWithAttempts = Type.Intersect([Delivery, Type.Object({
  attemptLog: Type.Array(DeliveryAttempt, { description: 'The latest 100 attempts, newest first' })
})])

export const ListDeliveriesQuery = Type.Object({ status: Type.Optional(DeliveryStatus), ...Pagination }, { additionalProperties: false })

export const DeliveryParams = Type.Object({ deliveryId: Type.String() })
