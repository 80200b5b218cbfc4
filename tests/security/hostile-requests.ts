import fc, { type Arbitrary } from 'fast-check'
import { conforming, hostileString, hostileValue, nearMiss, type Samples } from './arbitraries.ts'
import type { Operation } from './openapi.ts'

export interface HostileRequest {
  method: string
  url: string
  headers: Record<string, string>
  payload?: string | Buffer
}

export interface FuzzContext {
  /** Ids of real resources: path params often name one, so that requests get past the lookups. */
  knownIds: readonly string[]
  /** Values for X-Account-Id that select a real account. */
  accountIds: readonly string[]
  /** Accepted Authorization headers (an admin's, a member's): most requests pass auth and reach validation. */
  authorizations: readonly string[]
  /** Realistic values by field name (see `conforming`). */
  samples: Samples
  /** The X-Hub-Signature-256 of a body, so that deliveries to /webhook/chat get past the signature check. */
  signDelivery: (body: string | Buffer) => string
}

const UNRESERVED = /[A-Za-z0-9\-._~]/

/** Percent-encodes every UTF-8 byte but the unreserved ones (a lone surrogate goes as U+FFFD, as any client sends it). */
function encodeComponent (text: string): string {
  return [...Buffer.from(text, 'utf8')]
    .map((byte) => UNRESERVED.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)
    .join('')
}

/**
 * A header value as Node's HTTP parser hands it over: the bytes of the text,
 * read as Latin-1; the controls it refuses (NUL, CR, LF, DEL...) never get this
 * far (malformed-requests.test.ts sends those byte for byte).
 */
const refusedByParser = (character: string): boolean => {
  const code = character.charCodeAt(0)
  return (code < 0x20 && character !== '\t') || code === 0x7f
}
const asDelivered = (value: string): string =>
  [...Buffer.from(value, 'utf8').toString('latin1')].filter((character) => !refusedByParser(character)).join('')

/** Encodings no client library would produce: broken escapes, overlong and surrogate UTF-8, dot segments. */
const rawSegment = fc.constantFrom('%zz', '%', '%E', '%ED%A0%80', '%FF', '%C0%AF', '%00', '..', '%2e%2e', '%2F', '%u0041', '%25')

const rawQuery = fc.constantFrom(
  '%zz=1', 'limit=%ED%A0%80', 'a[b]=1', '=', '&&', '__proto__[x]=1', 'constructor[prototype][x]=1', 'x=%00', 'limit', 'offset=1e3', 'limit=0x10'
)

/** JSON texts a serializer never writes: poisoned prototypes, broken or truncated text, duplicate keys, a BOM, bad UTF-8. */
const rawJson: Arbitrary<string | Buffer> = fc.constantFrom<string | Buffer>(
  '{"__proto__":{"role":"admin"}}', '{"constructor":{"prototype":{"role":"admin"}}}', '{"name":', '', ' ', 'null', '[]', '1e999',
  '"\\ud800"', '\ufeff{}', '{"name":"a\\u0000b"}', '{"name":"a","name":"b"}', '{"name":"a"}garbage', '['.repeat(50) + ']'.repeat(50),
  '{"name":"\\udfff\\ud800"}', Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), Buffer.from([0xc0, 0xaf])
)

const jsonContentType = fc.constantFrom(
  'application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json; charset=iso-8859-1',
  'application/json; charset=utf-16', 'application/vnd.api+json', 'application/json;;'
)

const odditiesContentType = fc.constantFrom(
  'text/plain', 'text/html', 'application/xml', 'application/octet-stream', 'application/x-www-form-urlencoded',
  'multipart/form-data', 'multipart/form-data; boundary=', 'garbage', '*/*', ';', 'application/jsonx', 'application/'
)

interface Body { payload?: string | Buffer, contentType?: string }

function bodyFor (operation: Operation, samples: Samples): Arbitrary<Body> {
  const value = operation.body === undefined
    ? fc.oneof(hostileValue, fc.jsonValue({ maxDepth: 3 }))
    : fc.oneof(
      { weight: 2, arbitrary: conforming(operation.body, samples) },
      { weight: 5, arbitrary: nearMiss(operation.body, samples) },
      { weight: 1, arbitrary: hostileValue }
    )
  const json = value.map((v) => JSON.stringify(v) ?? 'null')
  return fc.oneof(
    { weight: 8, arbitrary: fc.record({ payload: json, contentType: jsonContentType }) },
    { weight: 1, arbitrary: fc.record({ payload: rawJson, contentType: jsonContentType }) },
    { weight: 1, arbitrary: fc.record({ payload: json, contentType: fc.constant('text/plain') }) },
    {
      weight: 1,
      arbitrary: fc.record({
        payload: fc.array(fc.tuple(hostileString(200), hostileString(2_000)), { maxLength: 5 }).map((fields) => new URLSearchParams(fields).toString()),
        contentType: fc.constant('application/x-www-form-urlencoded')
      })
    },
    {
      weight: 1,
      arbitrary: fc.record({
        payload: fc.tuple(hostileString(100), hostileString(2_000))
          .map(([name, text]) => `--b\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${text}\r\n--b--\r\n`),
        contentType: fc.constant('multipart/form-data; boundary=b')
      })
    },
    { weight: 1, arbitrary: fc.record({ payload: json, contentType: fc.oneof(odditiesContentType, hostileString(200)) }) },
    { weight: 1, arbitrary: json.map((payload) => ({ payload })) },
    { weight: 1, arbitrary: fc.constant({}) }
  )
}

function queryFor (operation: Operation, samples: Samples): Arbitrary<string> {
  const parameters = Object.entries(operation.query).map(([name, schema]) => fc.option(fc.oneof(
    { weight: 3, arbitrary: conforming(schema, samples, name).map((value): Array<[string, string]> => [[name, String(value)]]) },
    { weight: 2, arbitrary: hostileString(4_000).map((value): Array<[string, string]> => [[name, value]]) },
    // A repeated key arrives as an array.
    { weight: 1, arbitrary: fc.array(hostileString(100), { minLength: 2, maxLength: 3 }).map((values) => values.map((value): [string, string] => [name, value])) }
  ), { nil: [] }))
  const unknown = fc.option(fc.tuple(hostileString(100), hostileString(100)).map((pair) => [pair]), { nil: [] })
  return fc.tuple(fc.tuple(...parameters, unknown), fc.option(rawQuery, { nil: undefined })).map(([pairs, raw]) => {
    const encoded = pairs.flat().map(([key, value]) => `${encodeComponent(key)}=${encodeComponent(value)}`)
    return [...encoded, ...(raw === undefined ? [] : [raw])].join('&')
  })
}

function pathFor (operation: Operation, knownIds: readonly string[]): Arbitrary<string> {
  const segment = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...knownIds) },
    { weight: 2, arbitrary: hostileString(8_000).map(encodeComponent) },
    { weight: 1, arbitrary: rawSegment }
  )
  return fc.tuple(...operation.pathParams.map(() => segment))
    .map((values) => operation.pathParams.reduce((path, name, i) => path.replace(`:${name}`, values[i]!), operation.path))
}

/**
 * Requests for one route: mostly authorized (so that they reach validation),
 * with bad path params, query strings, bodies, content types and headers.
 */
export function hostileRequests (operation: Operation, context: FuzzContext): Arbitrary<HostileRequest> {
  const authorization = fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...context.authorizations) },
    { weight: 1, arbitrary: hostileString(4_000) },
    { weight: 1, arbitrary: fc.constant(undefined) }
  )
  const header = (values: Arbitrary<string>): Arbitrary<string | undefined> => fc.option(values, { nil: undefined, freq: 2 })
  return fc.record({
    // Now and then a CORS preflight for the route, with its own headers.
    preflight: fc.oneof({ weight: 9, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.tuple(hostileString(200), hostileString(1_000)) }),
    path: pathFor(operation, context.knownIds),
    query: queryFor(operation, context.samples),
    body: bodyFor(operation, context.samples),
    authorization,
    accountId: header(fc.oneof(fc.constantFrom(...context.accountIds), hostileString(4_000))),
    idempotencyKey: header(hostileString(8_000)),
    // Read by the rate limiter (trusted proxies) and by CORS.
    forwardedFor: header(fc.oneof(fc.ipV4(), fc.ipV6(), hostileString(1_000))),
    origin: header(fc.oneof(fc.webUrl(), hostileString(1_000))),
    signed: fc.boolean()
  }).map(({ preflight, path, query, body, authorization, accountId, idempotencyKey, forwardedFor, origin, signed }) => {
    const headers: Record<string, string | undefined> = {
      'access-control-request-method': preflight?.[0],
      'access-control-request-headers': preflight?.[1],
      authorization,
      'x-account-id': accountId,
      'idempotency-key': idempotencyKey,
      'x-forwarded-for': forwardedFor,
      origin,
      'content-type': body.contentType,
      ...(signed && body.payload !== undefined && operation.path === '/webhook/chat' && { 'x-hub-signature-256': context.signDelivery(body.payload) })
    }
    return {
      method: preflight === undefined ? operation.method : 'OPTIONS',
      url: query === '' ? path : `${path}?${query}`,
      headers: Object.fromEntries(Object.entries(headers).flatMap(([name, value]) => value === undefined ? [] : [[name, asDelivered(value)]])),
      ...(body.payload !== undefined && { payload: body.payload })
    }
  })
}
