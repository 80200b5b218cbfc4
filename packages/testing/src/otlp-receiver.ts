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

/**
 * A local OTLP/HTTP traces receiver speaking the JSON encoding of the OpenTelemetry protocol
 * (POST /v1/traces, ExportTraceServiceRequest in, an empty ExportTraceServiceResponse out), as
 * a collector does on its port 4318. Other encodings get 415, so a test notices an exporter
 * that stopped sending JSON.
 */
export async function startOtlpReceiver (t: Teardown): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => { chunks.push(chunk) })
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end()
        return
      }
      if (req.headers['content-type']?.startsWith('application/json') !== true || req.headers['content-encoding'] !== undefined) {
        res.writeHead(415).end()
        return
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportTraceServiceRequest
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
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, spans }
}
