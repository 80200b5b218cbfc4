import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'

/** What machines poll (kubelet probes): answered, they are logged at debug. Scrapes go to the metrics listener, which logs none. */
const PROBES = new Set(['/health/live', '/health/ready'])

/** Path parameters that are secrets: the approval's one-time link, `/webhook/resume/:token`. */
const SECRET_PARAMS = new Set([':token'])

/**
 * A request's path as logs and traces show it: without the query string, where secrets travel
 * (build.ts, requestForLog), and with every secret path parameter as `[redacted]` (README, Logs).
 */
export const pathOf = (request: FastifyRequest): string => {
  const path = request.url.split('?')[0] ?? request.url
  const routeSegments = request.routeOptions?.url?.split('/') ?? []
  if (!routeSegments.some((segment) => SECRET_PARAMS.has(segment))) return path
  return path.split('/').map((segment, i) => SECRET_PARAMS.has(routeSegments[i] ?? '') ? '[redacted]' : segment).join('/')
}

/**
 * The api's request log: one line per request once it is answered, with the method, URL,
 * status and response time (Fastify's own controller writes an "incoming request" line at info
 * as well, and a "request completed" line without the URL), labelled with the request id. The
 * arrival is at debug: what a request that never ends leaves behind.
 */
export class RequestLog extends LogController {
  constructor () {
    super({ requestIdLogLabel: 'requestId' })
  }

  override incomingRequest (request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request')
  }

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { req: request, res: reply, responseTime: reply.elapsedTime }
    if (error !== null && error !== undefined) {
      reply.log.error({ ...line, err: error }, 'request errored')
    } else if (PROBES.has(pathOf(request))) {
      reply.log.debug(line, 'request completed')
    } else {
      reply.log.info(line, 'request completed')
    }
  }
}
