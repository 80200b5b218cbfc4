import { Type } from 'typebox'
import { PASSWORD_LENGTH } from '@switchboard/core/users'

/** The error body (README, Conventions), for every error status of every route. */
export const ErrorResponse = Type.Object({
  statusCode: Type.Integer(),
  code: Type.String(),
  error: Type.String(),
  message: Type.String(),
  details: Type.Optional(Type.Record(Type.String(), Type.Unknown()))
}, { $id: 'ErrorResponse' })

export const errorResponses = (...statuses: number[]): Record<number, typeof ErrorResponse> =>
  Object.fromEntries(statuses.map((status) => [status, ErrorResponse]))

/** No length or format rules: a malformed id is simply not found (README, Conventions: 404, not 400). */
export const IdParams = Type.Object({ id: Type.String() })

/** Dates leave as ISO 8601 strings: the serializer formats the Date objects the repositories return. */
export const Timestamp = Type.Unsafe<Date | string>(Type.String({ format: 'date-time' }))
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()])

/**
 * `limit` and `offset` of every list (README, Conventions: default 100, max 500). The offset's
 * bound keeps it exact in JavaScript and within Postgres' bigint.
 */
export const Pagination = {
  limit: Type.Integer({ minimum: 1, maximum: 500, default: 100 }),
  offset: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 })
}

/** The rule for every password a user is given, at creation, change or reset. */
export const NewPassword = (field: string) => Type.String({
  minLength: PASSWORD_LENGTH.min,
  maxLength: PASSWORD_LENGTH.max,
  errorMessage: `${field} must be ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters`
})
