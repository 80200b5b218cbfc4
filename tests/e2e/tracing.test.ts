/**
 * OpenTelemetry traces: one trace from the caller's request through the api's request span, the
 * run's start (group commit), its job's producer and consumer spans and the worker's execution to
 * a span per node, with the statements and HTTP calls below them, exported by OTLP/HTTP to a
 * loopback receiver, and the traceparent an http_request node sends.
 */
import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '@switchboard/testing/otlp-receiver'
import { startStack, type Stack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

const receiver = await startOtlpReceiver(t)
const sink = await startDeliverySink(t)

/** An api and a worker exporting to `to`; spans go out every 100 ms rather than every 5 s. */
const tracedStack = async (env: Record<string, string> = {}, to: OtlpReceiver = receiver): Promise<Stack> => await startStack(t, {
  env: { OTEL_EXPORTER_OTLP_ENDPOINT: to.url, OTEL_BSP_SCHEDULE_DELAY: '100', HTTP_REQUEST_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'info', ...env }
})

const hex = (bytes: number): string => randomBytes(bytes).toString('hex')

/** The spans a traced fire's trace holds once the run is done: a span of each name here. */
const FIRED_RUN_SPANS = ['run.start', 'create workflow-runs', 'process workflow-runs', 'run.execute', 'node set', 'node http_request', 'POST']

/** set → http_request to the sink (with a query string), fired with the caller's traceparent; the run's id and the trace's spans once all are in. */
async function tracedRun (stack: Stack, path: string, from: OtlpReceiver = receiver): Promise<{ runId: string, traceId: string, callerSpanId: string, spans: ReceivedSpan[] }> {
  const token = await stack.adminToken()
  const workflowId = await stack.client.createWorkflow(token, {
    nodes: [
      { id: 'greeting', type: 'set', config: { values: { hello: 'world' } } },
      { id: 'notify', type: 'http_request', config: { method: 'POST', url: `${sink.url}/${path}?token=query-secret`, body: { hello: '{{greeting.hello}}' } } }
    ],
    edges: [{ source: 'greeting', target: 'notify' }]
  })
  const traceId = hex(16)
  const callerSpanId = hex(8)
  const runId = await stack.client.fire(token, workflowId, { note: 'trigger-secret' }, { headers: { traceparent: `00-${traceId}-${callerSpanId}-01`, 'x-request-id': `traced-${traceId}` } })
  const run = await stack.client.runReaching(token, runId)
  if (run.status !== 'SUCCESS') throw new Error(`run ${runId} ended ${run.status}: ${run.error}`)
  const spans = await waitFor(async () => {
    const ofTrace = from.spans.filter((span) => span.traceId === traceId)
    return FIRED_RUN_SPANS.every((name) => ofTrace.some((span) => span.name === name)) && connected(ofTrace, callerSpanId) ? ofTrace : undefined
  }, { what: `the spans of trace ${traceId}` })
  return { runId, traceId, callerSpanId, spans }
}

/** The one span of `spans` named `name`. */
function only (t: Test, spans: ReceivedSpan[], name: string): ReceivedSpan {
  const named = spans.filter((span) => span.name === name)
  t.equal(named.length, 1, `one ${name} span`)
  return named[0]!
}

/**
 * Whether every span of a trace has its parent among `spans`, but the caller's: the processes
 * export in batches of their own, and a parent ends (and is sent) after its children.
 */
function connected (spans: ReceivedSpan[], callerSpanId: string): boolean {
  return spans.every((span) => span.parentSpanId === undefined || span.parentSpanId === callerSpanId || spans.some((parent) => parent.spanId === span.parentSpanId))
}

/** Whether `span` descends from `ancestor` within `spans`. */
function descends (spans: ReceivedSpan[], span: ReceivedSpan, ancestor: ReceivedSpan): boolean {
  for (let parent = span.parentSpanId; parent !== undefined; parent = spans.find((candidate) => candidate.spanId === parent)?.parentSpanId) {
    if (parent === ancestor.spanId) return true
  }
  return false
}

const stack = await tracedStack()

t.test('one trace links the request, the run\'s start, its job, its execution, its nodes and their statements and HTTP calls; the http_request sends its call\'s traceparent', async (t) => {
  const { runId, traceId, callerSpanId, spans } = await tracedRun(stack, 'traced')
  t.same([...new Set(receiver.encodings)], ['application/json'], 'OTLP/HTTP JSON, the default')

  const start = only(t, spans, 'run.start')
  const request = only(t, spans, 'POST /api/automation/workflows/:id/fire')
  t.equal(request.service, 'switchboard-api')
  t.equal(request.kind, 2, 'a server span')
  t.equal(request.parentSpanId, callerSpanId, 'continues the caller\'s traceparent')
  t.match(request.attributes, { 'http.response.status_code': 202, 'url.path': `/api/automation/workflows/${start.attributes['switchboard.workflow.id']}/fire`, 'switchboard.request.id': `traced-${traceId}` })

  const handler = spans.find((span) => span.parentSpanId === request.spanId && span.name.startsWith('handler - '))
  t.match(handler, { service: 'switchboard-api' }, 'the route handler\'s span, child of the request\'s')

  t.equal(start.service, 'switchboard-api')
  t.equal(start.parentSpanId, handler?.spanId, 'started in the handler: its span is the parent')
  t.match(start.attributes, { 'switchboard.run.id': runId, 'switchboard.run.created': true, 'switchboard.group.size': Number })
  t.ok(Number(start.attributes['switchboard.group.size']) >= 1)
  t.equal(start.status.code, 0, 'not an error')

  const created = only(t, spans, 'create workflow-runs')
  t.match(created, { service: 'switchboard-api', kind: 4, parentSpanId: start.spanId, attributes: { 'messaging.destination.name': 'workflow-runs', 'switchboard.run.id': runId } }, 'the job\'s PRODUCER span, child of run.start')
  const processed = only(t, spans, 'process workflow-runs')
  t.match(processed, { service: 'switchboard-worker', kind: 5, parentSpanId: created.spanId, attributes: { 'bullmq.queue.name': 'workflow-runs' } }, 'BullMQ\'s CONSUMER span, child of the job\'s PRODUCER span')

  const execute = only(t, spans, 'run.execute')
  t.equal(execute.service, 'switchboard-worker')
  t.equal(execute.parentSpanId, processed.spanId, 'the run executes in its job\'s CONSUMER span')
  t.match(execute.attributes, { 'switchboard.run.id': runId, 'switchboard.workflow.id': String, 'switchboard.run.outcome': 'SUCCESS' })

  const set = only(t, spans, 'node set')
  const http = only(t, spans, 'node http_request')
  for (const [node, id] of [[set, 'greeting'], [http, 'notify']] as const) {
    t.equal(node.service, 'switchboard-worker')
    t.equal(node.parentSpanId, execute.spanId, `${id}'s span is a child of run.execute`)
    t.match(node.attributes, { 'switchboard.node.id': id, 'switchboard.node.outcome': 'success' })
  }

  const call = only(t, spans, 'POST')
  t.match(call, { service: 'switchboard-worker', kind: 3, parentSpanId: http.spanId, attributes: { 'http.request.method': 'POST', 'url.full': `${sink.url}/traced`, 'server.address': '127.0.0.1', 'http.response.status_code': 200 } }, 'the node\'s HTTP call: a CLIENT span, child of the node\'s')
  t.notOk('url.query' in call.attributes, 'no query string')
  const delivery = sink.deliveries.find((candidate) => candidate.path.startsWith('/traced'))
  t.equal(delivery?.traceparent, `00-${traceId}-${call.spanId}-01`, 'the receiver got the traceparent of the node\'s HTTP call')

  const statements = spans.filter((span) => span.kind === 3 && span.attributes['db.system.name'] === 'postgresql')
  const stored = spans.find((span) => span.service === 'switchboard-api' && span.name === 'transaction')
  t.ok(stored !== undefined && descends(spans, stored, handler!), 'the api\'s transaction that stores the run, in the request\'s trace')
  t.ok(statements.some((span) => span.parentSpanId === stored?.spanId), 'with its statements')
  t.ok(statements.some((span) => span.service === 'switchboard-worker' && descends(spans, span, execute)), 'the worker\'s statements, below run.execute')
  t.ok(statements.every((span) => typeof span.attributes['db.query.text'] === 'string' && span.attributes['db.namespace'] !== undefined), 'each with its text and database')
  const exported = JSON.stringify(spans)
  for (const secret of ['trigger-secret', 'query-secret']) t.notMatch(exported, secret, `no ${secret} in any span`)

  // A line written inside a span names it: the api's line of the request, the worker's of the run.
  const lines = (process: { output: () => string }): Array<Record<string, any>> => process.output().split('\n').flatMap((line) => {
    try { return [JSON.parse(line)] } catch { return [] }
  })
  const completed = lines(stack.api).find((line) => line.requestId === `traced-${traceId}` && line.msg === 'request completed')
  t.equal(completed?.trace_id, traceId, 'the request\'s log line names its trace')
  t.ok(spans.some((span) => span.service === 'switchboard-api' && span.spanId === completed?.span_id), 'and a span of it in the api (the request\'s own, or its hook\'s)')
  t.match(lines(stack.workers[0]!).find((line) => line.runId === runId && line.msg === 'Run started'), { trace_id: traceId, span_id: execute.spanId }, 'the run\'s lines name its run.execute')
})

t.test('a run started by the inbound webhook (its own body parser) is a child of that request too', async (t) => {
  const token = await stack.adminToken()
  const workflowId = await stack.client.createWorkflow(token, { triggerType: 'WEBHOOK' })
  const traceId = hex(16)
  const callerSpanId = hex(8)
  const res = await stack.call('POST', `/api/automation/webhook/${workflowId}`, { body: { hello: 'world' }, headers: { traceparent: `00-${traceId}-${callerSpanId}-01` } })
  t.equal(res.status, 200)
  const spans = await waitFor(async () => {
    const ofTrace = receiver.spans.filter((span) => span.traceId === traceId)
    return ofTrace.some((span) => span.name === 'node set') && ofTrace.some((span) => span.name === 'run.execute') && connected(ofTrace, callerSpanId) ? ofTrace : undefined
  }, { what: `the node span of trace ${traceId}` })
  const request = spans.find((span) => span.parentSpanId === callerSpanId)!
  t.equal(request.name, 'POST /api/automation/webhook/:workflowId')
  const handler = spans.find((span) => span.parentSpanId === request.spanId && span.name.startsWith('handler - '))
  const start = only(t, spans, 'run.start')
  t.equal(start.parentSpanId, handler?.spanId, 'run.start is the handler\'s child')
  t.match(start.attributes, { 'switchboard.run.id': res.body.runId, 'switchboard.run.created': true })
  t.ok(descends(spans, only(t, spans, 'run.execute'), start), 'run.execute descends from run.start')
})

t.test('with HTTP_REQUEST_TRACEPARENT=false the http_request sends none, and its spans are still exported; OTLP as protobuf when asked', async (t) => {
  const protobufReceiver = await startOtlpReceiver(t)
  const { spans } = await tracedRun(await tracedStack({ HTTP_REQUEST_TRACEPARENT: 'false', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }, protobufReceiver), 'untraced', protobufReceiver)
  t.same([...new Set(protobufReceiver.encodings)], ['application/x-protobuf'], 'http/protobuf sends protobuf')
  t.equal(only(t, spans, 'POST').parentSpanId, only(t, spans, 'node http_request').spanId)
  const delivery = sink.deliveries.find((candidate) => candidate.path.startsWith('/untraced'))
  t.ok(delivery, 'the node called the sink')
  t.equal(delivery?.traceparent, undefined, 'without a traceparent')
})

t.test('a run resumed after a wait continues under the run.execute that suspended it, through its resume job\'s spans', async (t) => {
  const token = await stack.adminToken()
  const workflowId = await stack.client.createWorkflow(token, {
    nodes: [{ id: 'pause', type: 'wait', config: { seconds: 1 }, next: 'after' }, { id: 'after', type: 'set', config: { values: { done: true } } }]
  })
  const traceId = hex(16)
  const callerSpanId = hex(8)
  const runId = await stack.client.fire(token, workflowId, {}, { headers: { traceparent: `00-${traceId}-${callerSpanId}-01` } })
  t.equal((await stack.client.runReaching(token, runId)).status, 'SUCCESS')
  const spans = await waitFor(async () => {
    const ofTrace = receiver.spans.filter((span) => span.traceId === traceId)
    return ofTrace.filter((span) => span.name === 'run.execute').length === 2 && ofTrace.some((span) => span.name === 'node set') && connected(ofTrace, callerSpanId) ? ofTrace : undefined
  }, { what: `both run.execute spans of trace ${traceId}` })
  const [suspended, resumed] = spans.filter((span) => span.name === 'run.execute').sort((a, b) => (a.attributes['switchboard.run.outcome'] === 'WAITING' ? -1 : 1) - (b.attributes['switchboard.run.outcome'] === 'WAITING' ? -1 : 1))
  t.equal(suspended?.attributes['switchboard.run.outcome'], 'WAITING')
  const consumer = spans.find((span) => span.spanId === resumed?.parentSpanId)
  t.match(consumer, { name: 'process workflow-runs', kind: 5 }, 'the resumed run.execute is the child of its job\'s CONSUMER span')
  const producer = spans.find((span) => span.spanId === consumer?.parentSpanId)
  t.match(producer, { name: 'add workflow-runs.run', kind: 4, service: 'switchboard-worker' }, 'whose PRODUCER span is BullMQ\'s add of the resume job')
  t.ok(producer !== undefined && descends(spans, producer, suspended!), 'made under the run.execute that suspended the run')
})

t.test('a failed node\'s span carries its error, and the run\'s span is an error', async (t) => {
  const token = await stack.adminToken()
  const workflowId = await stack.client.createWorkflow(token, {
    nodes: [{ id: 'refused', type: 'http_request', config: { method: 'GET', url: 'ftp://example.com/file' } }]
  })
  const traceId = hex(16)
  const runId = await stack.client.fire(token, workflowId, {}, { headers: { traceparent: `00-${traceId}-${hex(8)}-01` } })
  t.equal((await stack.client.runReaching(token, runId)).status, 'FAILED')
  const spans = await waitFor(async () => {
    const ofTrace = receiver.spans.filter((span) => span.traceId === traceId)
    return ofTrace.some((span) => span.name === 'run.execute') ? ofTrace : undefined
  }, { what: `the run.execute span of trace ${traceId}` })
  const node = only(t, spans, 'node http_request')
  t.match(node, { attributes: { 'switchboard.node.outcome': 'failure' }, status: { code: 2, message: 'url must use http or https' } })
  t.match(only(t, spans, 'run.execute'), { attributes: { 'switchboard.run.outcome': 'FAILED' }, status: { code: 2 } })
})
