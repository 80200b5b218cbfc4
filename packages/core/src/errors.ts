/**
 * A failure with a stable code and the HTTP status it maps to. `message` is the
 * client-facing text of the spec or contract, word for word.
 */
export class AppError extends Error {
  override name = 'AppError'
  readonly statusCode: number
  readonly code: string
  readonly details?: Record<string, unknown>

  constructor (statusCode: number, code: string, message: string, details?: Record<string, unknown>) {
    super(message)
    this.statusCode = statusCode
    this.code = code
    this.details = details
  }
}

export const badRequest = (message: string, code = 'BAD_REQUEST'): AppError => new AppError(400, code, message)
export const notFound = (message: string, code = 'NOT_FOUND'): AppError => new AppError(404, code, message)
export const conflict = (message: string, code = 'CONFLICT'): AppError => new AppError(409, code, message)
export const unauthorized = (): AppError => new AppError(401, 'UNAUTHORIZED', 'Unauthorized')
export const forbidden = (): AppError => new AppError(403, 'FORBIDDEN', 'Forbidden')
