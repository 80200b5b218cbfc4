import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from '@switchboard/core/config'
import { loggerOptions, type LoggerOptions } from '@switchboard/core/logger'
import { app } from './app.ts'
import { requestIdOf } from './plugins/request-id.ts'
import { LONGEST_REQUEST_TIMEOUT_MS } from './plugins/request-timeout.ts'
import { pathOf, RequestLog } from './request-log.ts'
import { answerClientError, answerFrameworkError, formatValidationError } from './plugins/errors.ts'
import { validatorCompiler } from './validator.ts'

export interface BuildOptions {
  config: Config
  /** Tests turn logging off; the server logs at LOG_LEVEL. */
  logger?: boolean
  /** Where the log lines go instead of stdout (tests that read them). */
  logStream?: NodeJS.WritableStream
}

export const BODY_LIMIT = 1024 * 1024

/**
 * Fastify's request serializer without the query string: secrets travel there
 * (`/webhook/chat?hub.verify_token=…`, tokens some senders put in webhook URLs).
 */
function requestForLog (request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: pathOf(request),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort
  }
}

function apiLoggerOptions (level: string): LoggerOptions {
  const options = loggerOptions(level, 'api')
  return { ...options, serializers: { ...options.serializers, req: requestForLog } }
}

/** A configured Fastify instance with the app registered, not yet listening. */
export async function buildServer (options: BuildOptions): Promise<FastifyInstance> {
  const server = Fastify({
    logger: options.logger === false ? false : { ...apiLoggerOptions(options.config.logLevel), ...(options.logStream !== undefined && { stream: options.logStream }) },
    bodyLimit: BODY_LIMIT,
    // Slow clients must not hold sockets forever (Fastify's production guidance): each route's own
    // limit is plugins/request-timeout.ts', Node's the longest of them.
    requestTimeout: LONGEST_REQUEST_TIMEOUT_MS,
    connectionTimeout: 60_000,
    keepAliveTimeout: 72_000,
    // X-Forwarded-For only from the proxies TRUST_PROXY names (default: loopback and private networks).
    trustProxy: options.config.trustProxy,
    // Any id must reach its route and answer like any unknown one (404; the inbound webhook
    // 200 ignored), never 414: no request line Node accepts (16 KiB of headers) is longer.
    routerOptions: { maxParamLength: 16 * 1024 },
    schemaErrorFormatter: formatValidationError,
    // Refusals that happen before routing answer with the API's error body too.
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    // X-Request-Id when it is a sane token, else a new one; logged as requestId, like the worker's run lines.
    genReqId: (req) => requestIdOf(req.headers['x-request-id']),
    // One line per answered request; probes at debug (request-log.ts).
    logController: new RequestLog()
  }).withTypeProvider<TypeBoxTypeProvider>()
  server.setValidatorCompiler(validatorCompiler)
  // Fastify's close waits until every keep-alive connection is gone, and a connection whose request
  // was answered during the close stays open until keepAliveTimeout: such answers end their connection,
  // so that a stopping api exits once its requests are answered, not when close-with-grace gives up.
  let closing = false
  server.addHook('preClose', (done) => {
    closing = true
    done()
  })
  server.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close')
  })
  await server.register(fp(app), { config: options.config })
  return server
}
