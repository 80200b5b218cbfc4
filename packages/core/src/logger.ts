import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino'

export type { Logger }

/** Paths pino blanks out wherever they appear in a log line. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-hub-signature-256"]',
  'headers.authorization',
  '*.password',
  '*.accessToken',
  '*.token',
  'password',
  'accessToken',
  'token'
]

export function loggerOptions (level: string, name: string): LoggerOptions {
  return {
    name,
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' }
  }
}

export function createLogger (level: string, name: string, destination?: DestinationStream): Logger {
  return destination === undefined ? pino(loggerOptions(level, name)) : pino(loggerOptions(level, name), destination)
}
