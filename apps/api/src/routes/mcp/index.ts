import { STATUS_CODES } from 'node:http'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { BODY_LIMIT } from '../../build.ts'
import { errorResponses } from '../../schemas/common.ts'
import { createStartQuota } from '../api/automation/start-quota.ts'
import { McpAnswer, McpMessage } from './schemas.ts'
import { createToolServer } from './tools.ts'

/** Headers of the body's framing and the connection: the web request is built without a body (the transport is given it parsed). */
const FRAMING_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive'])

/** The Fastify request as the SDK's web-standard transport reads it; the body is given to it parsed. */
function webRequestOf (request: FastifyRequest): Request {
  const headers = new Headers()
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || FRAMING_HEADERS.has(name)) continue
    for (const one of [value].flat()) headers.append(name, one)
  }
  return new Request(new URL(request.url, 'http://localhost'), { method: request.method, headers })
}

/** The codes of the transport's refusals, by status. */
const REFUSAL_CODES: Record<number, string> = { 400: 'BAD_REQUEST', 404: 'NOT_FOUND', 405: 'METHOD_NOT_ALLOWED', 406: 'NOT_ACCEPTABLE', 415: 'UNSUPPORTED_MEDIA_TYPE' }

/**
 * /mcp (README, MCP server): the Model Context Protocol's Streamable HTTP transport, stateless
 * (docs/decisions.md): every POST gets a server and a transport of its own, so no session is kept
 * and any replica answers any request. The bearer is an API key of scope `mcp` (or a person's
 * token), checked by the auth plugin like /api's; the tools are the caller's AGENT workflows (tools.ts).
 * Its own body limit, written here so that a larger one elsewhere never widens it.
 */
const mcp: FastifyPluginAsyncTypebox = async (fastify) => {
  const checkStartQuota = createStartQuota(fastify)

  fastify.post('', {
    bodyLimit: BODY_LIMIT,
    config: { scope: 'mcp' },
    schema: {
      tags: ['mcp'],
      'x-api-key-scope': 'mcp',
      body: McpMessage,
      response: { 200: McpAnswer, 202: { description: 'A notification or a response was accepted', type: 'null' }, ...errorResponses(400, 401, 403, 404, 405, 406, 413, 415, 429) }
    }
  }, async (request, reply) => {
    // The client's disconnection ends the wait for a run (never the run itself).
    const gone = new AbortController()
    reply.raw.once('close', () => { gone.abort() })
    const server = createToolServer(fastify, { request, reply, checkStartQuota, signal: gone.signal })
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    reply.raw.once('close', () => {
      transport.close().catch(() => {})
      server.close().catch(() => {})
    })
    await server.connect(transport)
    const answer = await transport.handleRequest(webRequestOf(request), { parsedBody: request.body })
    if (answer.status < 400) return reply.send(answer)
    // The transport's refusals (a missing Accept, a message that is no JSON-RPC) in the API's error
    // body (README, Conventions); the SDK's clients read such an answer as text, whatever its shape.
    const refusal = await answer.json().catch(() => undefined) as { error?: { message?: unknown } } | undefined
    const message = typeof refusal?.error?.message === 'string' ? refusal.error.message : STATUS_CODES[answer.status] ?? 'Bad Request'
    // Untyped: the transport's status is known at run time only (each is in the error responses above).
    return (reply as FastifyReply).code(answer.status).send({ statusCode: answer.status, code: REFUSAL_CODES[answer.status] ?? 'BAD_REQUEST', error: message, message })
  })

  // Stateless: no stream of server-initiated messages (GET) and no session to end (DELETE). The
  // transport answers 405 for both, and so do we, before building anything (the SDK's clients expect it).
  const stateless = 'Method Not Allowed: /mcp is stateless, POST only'
  const notAllowed = { statusCode: 405, code: 'METHOD_NOT_ALLOWED', error: stateless, message: stateless }
  for (const method of ['GET', 'DELETE'] as const) {
    fastify.route({
      method,
      url: '',
      config: { scope: 'mcp' },
      schema: { tags: ['mcp'], 'x-api-key-scope': 'mcp', response: errorResponses(401, 403, 405) },
      handler: async (_request, reply) => reply.code(405).header('allow', 'POST').send(notAllowed)
    })
  }
}

export default mcp
