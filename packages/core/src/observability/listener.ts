import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Logger } from '../logger.ts'

/** A listener of probes and scrapes: its bound port (known once listening) and how to stop it. */
export interface ProbeListener {
  port: number
  close: () => Promise<void>
}

export function sendJson (res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body))
}

const errorBody = (statusCode: number, code: string, error: string) => ({ statusCode, code, error, message: error })

/**
 * A small node:http listener for probes and scrapes beside a process's main work (the worker's
 * health and metrics, the api's metrics): GET only, one answer per path in `routes`, the api's
 * error body for the rest. One route table needs no framework. Resolves once listening (rejects
 * with the listen error, e.g. a port in use); logs `<name> listening` and `<name> request failed`.
 */
export async function startProbeListener ({ name, host, port, logger, routes }: {
  name: string
  host: string
  port: number
  logger: Pick<Logger, 'info' | 'error'>
  routes: Record<string, (res: ServerResponse) => Promise<void>>
}): Promise<ProbeListener> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    if (req.method !== 'GET') {
      sendJson(res, 405, errorBody(405, 'METHOD_NOT_ALLOWED', 'Method Not Allowed'))
      return
    }
    const route = Object.hasOwn(routes, path) ? routes[path] : undefined
    if (route === undefined) {
      sendJson(res, 404, errorBody(404, 'NOT_FOUND', 'Not Found'))
      return
    }
    route(res).catch((err: unknown) => {
      logger.error({ err, path }, `${name} request failed`)
      if (!res.headersSent) sendJson(res, 500, errorBody(500, 'INTERNAL_SERVER_ERROR', 'Internal Server Error'))
    })
  })
  // Probes and scrapes only: no slow client may hold a connection for long.
  server.requestTimeout = 10_000
  server.listen(port, host)
  await once(server, 'listening')
  const bound = (server.address() as AddressInfo).port
  logger.info({ host, port: bound }, `${name} listening`)
  return {
    port: bound,
    close: async () => {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    }
  }
}
