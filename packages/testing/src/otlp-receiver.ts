import { once } from 'node:events'
import { createServer } from 'node:http'
import type { Teardown } from './teardown.ts'

type AttributeValue = string | number | boolean

/** One span as an OTLP exporter sent it, flattened with its resource's service name. */
export interface ReceivedSpan {
  /** The resource's `service.name`. */
  service: string
  traceId: string
  spanId: string
  /** Undefined for a root span. */
  parentSpanId: string | undefined
  name: string
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number
  attributes: Record<string, AttributeValue>
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: { code: number, message?: string }
}

export interface OtlpReceiver {
  /** The base endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT takes it (the exporter adds /v1/traces). */
  url: string
  spans: ReceivedSpan[]
  /** The content type of each request received, in order. */
  encodings: string[]
}

interface OtlpKeyValue { key: string, value: Record<string, unknown> }
interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes?: OtlpKeyValue[]
  status?: { code?: number, message?: string }
}
interface ExportTraceServiceRequest {
  resourceSpans?: Array<{ resource?: { attributes?: OtlpKeyValue[] }, scopeSpans?: Array<{ spans?: OtlpSpan[] }> }>
}

/** An OTLP AnyValue of a scalar (int64 arrives as a decimal string in JSON). */
function scalar (value: Record<string, unknown>): AttributeValue {
  if (typeof value.stringValue === 'string') return value.stringValue
  if (typeof value.boolValue === 'boolean') return value.boolValue
  if (value.intValue !== undefined) return Number(value.intValue)
  if (typeof value.doubleValue === 'number') return value.doubleValue
  return JSON.stringify(value)
}

const attributesOf = (list: OtlpKeyValue[] = []): Record<string, AttributeValue> =>
  Object.fromEntries(list.map(({ key, value }) => [key, scalar(value)]))

/** A protobuf message's fields by number: varints as bigints, fixed64 and length-delimited ones as their bytes. */
type ProtoFields = Map<number, Array<bigint | Buffer>>

/** The protobuf wire format (varint, fixed64, length-delimited, fixed32), read into fields: what OTLP/HTTP protobuf sends. */
function protoFields (bytes: Buffer): ProtoFields {
  const fields: ProtoFields = new Map()
  let at = 0
  const varint = (): bigint => {
    let value = 0n
    for (let shift = 0n; ; shift += 7n) {
      const byte = bytes[at++]!
      value |= BigInt(byte & 0x7f) << shift
      if ((byte & 0x80) === 0) return value
    }
  }
  while (at < bytes.length) {
    const key = Number(varint())
    const wireType = key & 7
    let value: bigint | Buffer
    if (wireType === 0) value = varint()
    else if (wireType === 1) { value = bytes.subarray(at, at + 8); at += 8 } else if (wireType === 2) {
      const length = Number(varint())
      value = bytes.subarray(at, at + length)
      at += length
    } else if (wireType === 5) { value = bytes.subarray(at, at + 4); at += 4 } else throw new Error(`protobuf wire type ${wireType} is not OTLP's`)
    fields.set(key >> 3, [...(fields.get(key >> 3) ?? []), value])
  }
  return fields
}

const bytesOf = (fields: ProtoFields, n: number): Buffer[] => (fields.get(n) ?? []).filter((value): value is Buffer => Buffer.isBuffer(value))
const textOf = (fields: ProtoFields, n: number): string | undefined => bytesOf(fields, n)[0]?.toString('utf8')
const numberOf = (fields: ProtoFields, n: number): number | undefined => {
  const value = fields.get(n)?.[0]
  return typeof value === 'bigint' ? Number(value) : undefined
}

/** OTLP's KeyValue list in protobuf (key 1, AnyValue 2: string 1, bool 2, int 3, double 4), as the JSON reader gives it. */
const protoAttributes = (encoded: Buffer[]): OtlpKeyValue[] => encoded.map((keyValue) => {
  const fields = protoFields(keyValue)
  const value = protoFields(bytesOf(fields, 2)[0] ?? Buffer.alloc(0))
  const double = bytesOf(value, 4)[0]
  return {
    key: textOf(fields, 1) ?? '',
    value: value.has(1)
      ? { stringValue: textOf(value, 1) ?? '' }
      : value.has(2) ? { boolValue: numberOf(value, 2) === 1 } : value.has(3) ? { intValue: numberOf(value, 3) } : double !== undefined ? { doubleValue: double.readDoubleLE(0) } : {}
  }
})

/** An ExportTraceServiceRequest in protobuf, read into the shape of its JSON encoding. */
function fromProtobuf (body: Buffer): ExportTraceServiceRequest {
  return {
    resourceSpans: bytesOf(protoFields(body), 1).map((resourceSpans) => {
      const fields = protoFields(resourceSpans)
      const resource = protoFields(bytesOf(fields, 1)[0] ?? Buffer.alloc(0))
      return {
        resource: { attributes: protoAttributes(bytesOf(resource, 1)) },
        scopeSpans: bytesOf(fields, 2).map((scopeSpans) => ({
          spans: bytesOf(protoFields(scopeSpans), 2).map((encoded): OtlpSpan => {
            const span = protoFields(encoded)
            const status = protoFields(bytesOf(span, 15)[0] ?? Buffer.alloc(0))
            const message = textOf(status, 2)
            return {
              traceId: bytesOf(span, 1)[0]?.toString('hex') ?? '',
              spanId: bytesOf(span, 2)[0]?.toString('hex') ?? '',
              parentSpanId: bytesOf(span, 4)[0]?.toString('hex'),
              name: textOf(span, 5) ?? '',
              kind: numberOf(span, 6) ?? 0,
              attributes: protoAttributes(bytesOf(span, 9)),
              status: { code: numberOf(status, 3) ?? 0, ...(message !== undefined && { message }) }
            }
          })
        }))
      }
    })
  }
}

/**
 * A local OTLP/HTTP traces receiver speaking both encodings of the OpenTelemetry protocol, protobuf
 * and JSON (POST /v1/traces, ExportTraceServiceRequest in, an empty ExportTraceServiceResponse out),
 * as a collector does on its port 4318; it records which each request used. Other encodings, and a
 * compressed body, get 415, so a test notices an exporter that sends something else.
 */
export async function startOtlpReceiver (t: Teardown): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const encodings: string[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => { chunks.push(chunk) })
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end()
        return
      }
      const type = req.headers['content-type']?.split(';')[0]?.trim() ?? ''
      if (!['application/json', 'application/x-protobuf'].includes(type) || req.headers['content-encoding'] !== undefined) {
        res.writeHead(415).end()
        return
      }
      encodings.push(type)
      const received = Buffer.concat(chunks)
      const body = type === 'application/json' ? JSON.parse(received.toString('utf8')) as ExportTraceServiceRequest : fromProtobuf(received)
      for (const { resource, scopeSpans = [] } of body.resourceSpans ?? []) {
        const service = String(attributesOf(resource?.attributes)['service.name'])
        for (const span of scopeSpans.flatMap((scope) => scope.spans ?? [])) {
          spans.push({
            service,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId === undefined || span.parentSpanId === '' ? undefined : span.parentSpanId,
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            status: { code: span.status?.code ?? 0, ...(span.status?.message !== undefined && { message: span.status.message }) }
          })
        }
      }
      // An empty ExportTraceServiceResponse in the request's encoding: zero bytes in protobuf.
      if (type === 'application/json') res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, spans, encodings }
}
