import { createHmac } from 'node:crypto'
import { request } from 'undici'
import { sendingTraceparent } from '../../observability/tracing.ts'
import { ALLOW_PRIVATE_HINT, BlockedAddressError } from './http-client.ts'
import { Type } from 'typebox'
import { NodeError, RetryableNodeError, type NodeContext, type NodeCredential } from '../types.ts'
import { renderTemplate, templatePaths } from '../template.ts'
import { parsePath } from '../template-syntax.ts'
import { optionalBoolean, optionalObject, optionalString, requiredString } from './config.ts'
import { defineNode, oneOfAnyCase, templated } from './definition.ts'

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
/** The response lands in `result` (a jsonb column): keep it bounded. */
const MAX_RESPONSE_BYTES = 1024 * 1024
/**
 * JSON answers nested deeper than this fail the node: Node parses far deeper
 * JSON than it can serialize again (JSON.stringify overflows the call stack
 * near 5,000 levels), and the output must be stored.
 * @internal exported for its tests
 */
export const MAX_RESPONSE_JSON_DEPTH = 100

/**
 * Request headers that never carry a secret: the only ones a redirect to another origin keeps
 * (README, Security), and the only literal header values an export keeps (README, Export and import).
 */
const HARMLESS_HEADERS: ReadonlySet<string> = new Set([
  'accept', 'accept-language', 'cache-control', 'content-language', 'content-type', 'idempotency-key', 'traceparent', 'user-agent'
])

/** Redirects an http_request follows, the statuses it follows, and what a log line shows of an address at most. */
const MAX_REDIRECTS = 5
const REDIRECT_STATUSES = [301, 302, 303, 307, 308]
const MAX_TARGET_LENGTH = 2048

interface HttpResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: unknown
}

function buildUrl (config: Record<string, unknown>): URL {
  const text = requiredString(config, 'url')
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new NodeError(`url is not a valid URL: ${text}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new NodeError('url must use http or https')
  for (const [name, value] of Object.entries(optionalObject(config, 'query') ?? {})) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item !== undefined && item !== null) url.searchParams.append(name, typeof item === 'object' ? JSON.stringify(item) : String(item))
    }
  }
  return url
}

function buildHeaders (context: NodeContext): Record<string, string> {
  const { config } = context
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(optionalObject(config, 'headers') ?? {})) {
    if (value !== undefined && value !== null) headers[name.toLowerCase()] = typeof value === 'object' ? JSON.stringify(value) : String(value)
  }
  // An Idempotency-Key the author set in `headers` is kept; `idempotencyKey: false` sends none.
  if (optionalBoolean(config, 'idempotencyKey') ?? true) headers['idempotency-key'] ??= context.idempotencyKey
  return headers
}

/** Objects and arrays are sent as JSON; text as it is. */
function buildBody (config: Record<string, unknown>, headers: Record<string, string>): string | undefined {
  const body = config.body
  if (body === undefined || body === null || body === '') return undefined
  if (typeof body === 'string') return body
  headers['content-type'] ??= 'application/json'
  return JSON.stringify(body)
}

/** The header an hmac credential signs an http_request body into, GitHub's convention. */
const HMAC_SIGNATURE_HEADER = 'x-signature-256'

/**
 * The node's `credential` as request headers, over what the author wrote: bearer and basic as
 * Authorization, header as its name and value, hmac as `X-Signature-256: sha256=<hex>` over the
 * exact body bytes (empty without a body).
 */
function authenticate (credential: NodeCredential, headers: Record<string, string>, body: string | undefined): void {
  const { type, data, name } = credential
  switch (type) {
    case 'bearer':
      headers.authorization = `Bearer ${data.token}`
      return
    case 'basic':
      headers.authorization = `Basic ${Buffer.from(`${data.username}:${data.password}`).toString('base64')}`
      return
    case 'header':
      headers[data.name!.toLowerCase()] = data.value!
      return
    case 'hmac':
      headers[HMAC_SIGNATURE_HEADER] = `sha256=${createHmac('sha256', data.secret!).update(body ?? '').digest('hex')}`
      return
    default:
      throw new NodeError(`Credential ${name} is ${type}: an http_request authenticates with bearer, basic, header or hmac`)
  }
}

async function readBody (body: AsyncIterable<Buffer> & { destroy: () => void }): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.length
    if (size > MAX_RESPONSE_BYTES) {
      body.destroy()
      throw new NodeError(`Response body is larger than ${MAX_RESPONSE_BYTES} bytes`)
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** Whether arrays and objects in JSON `text` nest deeper than `limit`, counted in one pass without parsing. */
function nestsDeeperThan (text: string, limit: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const char = text[i]
    if (inString) {
      if (char === '\\') i++
      else if (char === '"') inString = false
    } else if (char === '"') {
      inString = true
    } else if (char === '[' || char === '{') {
      if (++depth > limit) return true
    } else if (char === ']' || char === '}') {
      depth--
    }
  }
  return false
}

function parseBody (text: string, contentType: string | string[] | undefined): unknown {
  if (text !== '' && typeof contentType === 'string' && /[/+]json\b/i.test(contentType)) {
    if (nestsDeeperThan(text, MAX_RESPONSE_JSON_DEPTH)) {
      throw new NodeError(`Response body nesting is too deep: more than ${MAX_RESPONSE_JSON_DEPTH} levels`)
    }
    try {
      return JSON.parse(text)
    } catch {
      return text
    }
  }
  return text
}

/**
 * Retry-After (RFC 9110): delay-seconds or an HTTP date, as ms from now; undefined when absent
 * or unreadable (the node's own backoff applies then).
 */
function retryAfterMsOf (header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined) return undefined
  if (/^\s*\d{1,10}\s*$/.test(value)) return Number(value) * 1000
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

/**
 * The address log lines and errors show: the node's url rendered with the run's data, but with
 * each credential template left as written, and without user info, query or fragment. A
 * credential never shows in whatever encoding the URL parser would give it, nor cut where it
 * holds a `/`, `?` or `#`.
 */
function shownTarget (rawUrl: unknown, result: Readonly<Record<string, unknown>>): string {
  const written = typeof rawUrl === 'string' ? rawUrl : ''
  const credentials: Record<string, Record<string, string>> = Object.create(null)
  for (const path of templatePaths(written)) {
    const [root, name, field] = parsePath(path)
    if (root === 'credentials' && name !== undefined && field !== undefined) {
      (credentials[name] ??= Object.create(null) as Record<string, string>)[field] = `{{credentials.${name}.${field}}}`
    }
  }
  const rendered = renderTemplate(written, { ...result, credentials })
  const text = typeof rendered === 'string' ? rendered : JSON.stringify(rendered) ?? ''
  const end = text.search(/[?#]/)
  const address = (end === -1 ? text : text.slice(0, end)).replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/]*@/, '$1')
  return address.length > MAX_TARGET_LENGTH ? `${address.slice(0, MAX_TARGET_LENGTH)}…` : address
}

/** One exchange; the engine's signal ends it (a cancel, a takeover, the attempt's timeoutMs). */
async function send (context: NodeContext, url: URL, method: string, headers: Record<string, string>, body: string | undefined): Promise<HttpResponse> {
  try {
    const call = async () => await request(url, { dispatcher: context.deps.http, method: method as 'GET', headers, body, signal: context.signal })
    // The receiver's spans join the run's trace; a traceparent the author set in `headers` is kept.
    const response = context.sendTraceparent === true && headers.traceparent === undefined ? await sendingTraceparent(call) : await call()
    const text = await readBody(response.body)
    return { status: response.statusCode, headers: response.headers, body: parseBody(text, response.headers['content-type']) }
  } catch (err) {
    if (err instanceof NodeError) throw err
    if (err instanceof BlockedAddressError) throw new NodeError(err.allowedWithPrivate ? `${err.message} ${ALLOW_PRIVATE_HINT}` : err.message)
    if (context.signal.aborted) throw new NodeError('Request aborted: the run was stopped')
    throw new RetryableNodeError(`Request failed: ${(err as Error).message}`)
  }
}

/**
 * The exchange with its redirects (at most MAX_REDIRECTS, as browsers follow them: 303, and 301
 * or 302 after a POST, continue as a GET without body). A redirect to another origin keeps only
 * HARMLESS_HEADERS: whatever carries a credential or a signature (the node's `credential`,
 * templated or literal secrets, cookies) is never sent where the author did not send it. The
 * last redirect's answer is the node's when no more are followed.
 */
async function exchange (context: NodeContext, request: { url: URL, method: string, headers: Record<string, string>, body: string | undefined }): Promise<HttpResponse> {
  let { url, method, headers, body } = request
  for (let redirects = 0; ; redirects++) {
    const response = await send(context, url, method, headers, body)
    const location = response.headers.location
    if (!REDIRECT_STATUSES.includes(response.status) || typeof location !== 'string' || redirects === MAX_REDIRECTS) return response
    const next = URL.parse(location, url.href)
    if (next === null || (next.protocol !== 'http:' && next.protocol !== 'https:')) return response
    if (next.origin !== url.origin) headers = Object.fromEntries(Object.entries(headers).filter(([name]) => HARMLESS_HEADERS.has(name)))
    if ((response.status === 303 && method !== 'HEAD') || ((response.status === 301 || response.status === 302) && method === 'POST')) {
      method = 'GET'
      body = undefined
      headers = Object.fromEntries(Object.entries(headers).filter(([name]) => !name.startsWith('content-')))
    }
    url = next
  }
}

/**
 * An outbound HTTP call through the worker's shared dispatcher,
 * which refuses private and metadata addresses, on every redirect too. Network errors, time-outs,
 * 5xx and 429 answers may pass: the engine retries them as the node's `retry`
 * (or its older `retries`) allows, waiting at least what a Retry-After header
 * asks. Each attempt is written to the run's log before it is sent, and carries
 * the node's Idempotency-Key unless `idempotencyKey` is false.
 * `credential` names a credential of the workflow's owner that authenticates the call.
 */
export const httpRequest = defineNode({
  type: 'http_request',
  category: 'HTTP',
  description: 'Calls a URL (an outbound webhook, a partner API): the response becomes the node’s output.',
  config: {
    method: Type.Optional(templated(oneOfAnyCase(METHODS, { default: 'GET', description: 'The HTTP method.' }))),
    url: templated(Type.String({ minLength: 1, maxLength: 8192, description: 'An http or https URL; private and metadata addresses are refused (README, Security).' })),
    headers: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Request headers (templates allowed in values).' })),
    query: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Query parameters added to the URL; an array value repeats the parameter.' })),
    body: Type.Optional(Type.Unknown({ description: 'The body: an object or array is sent as JSON, text as it is (not for GET or HEAD).' })),
    credential: Type.Optional(Type.String({ minLength: 1, description: 'The name of a credential (bearer, basic, header or hmac) that authenticates the call.' })),
    failOnStatus: Type.Optional(templated(Type.Boolean({ default: true, description: 'Whether an answer of 400 or more fails the node.' }))),
    idempotencyKey: Type.Optional(Type.Boolean({ default: true, description: 'Whether the node’s Idempotency-Key header is sent (the same for every attempt).' }))
  },
  example: { method: 'POST', url: 'https://example.com/hook', headers: {}, body: { event: '{{triggerData.event}}' } },
  traits: {
    pure: false,
    recordsBeforeEffect: true,
    templateFields: 'every',
    links: [],
    credentials: { fields: ['credential', 'url', 'headers', 'query', 'body'], types: ['bearer', 'basic', 'header', 'hmac'] },
    secretFields: [
      { field: 'headers', kind: 'entries', keeps: HARMLESS_HEADERS },
      { field: 'query', kind: 'entries' },
      { field: 'url', kind: 'url' }
    ],
    retries: { allowed: true, defaultTimeoutMs: 10_000, legacyRetries: true }
  },
  /** `idempotencyKey` is a switch set when the workflow is written, never a template. */
  validate (config) {
    const value = config.idempotencyKey
    if (value !== undefined && value !== null && typeof value !== 'boolean') throw new NodeError('idempotencyKey must be true or false')
  },
  async execute (context) {
    const { config, rawConfig, log, beforeEffect } = context
    const method = (optionalString(config, 'method') ?? 'GET').toUpperCase()
    if (!METHODS.includes(method)) throw new NodeError(`method must be one of ${METHODS.join(', ')}`)
    const url = buildUrl(config)
    const headers = buildHeaders(context)
    const body = method === 'GET' || method === 'HEAD' ? undefined : buildBody(config, headers)
    if (context.credential !== undefined) authenticate(context.credential, headers, body)
    const failOnStatus = optionalBoolean(config, 'failOnStatus') ?? true
    const target = `${method} ${shownTarget(rawConfig.url, context.result)}`

    await beforeEffect(`Calling ${target} (attempt ${context.attempt})`)
    const response = await exchange(context, { url, method, headers, body })
    if (response.status >= 500 || response.status === 429) {
      const retryAfterMs = retryAfterMsOf(response.headers['retry-after'])
      if (context.mayRetry(retryAfterMs)) {
        const asked = retryAfterMs === undefined ? '' : ` (Retry-After ${Math.ceil(retryAfterMs / 1000)}s)`
        throw new RetryableNodeError(`${target} answered ${response.status}${asked}`, { retryAfterMs })
      }
    }
    log('INFO', `${target} answered ${response.status}`)
    if (failOnStatus && response.status >= 400) throw new NodeError(`Request failed with status ${response.status}`)
    return { output: response }
  }
})
