import { createHmac } from 'node:crypto'
import { createServer } from 'node:http'
import { measureWebhookPipeline } from '../lib/pipeline.ts'
import { failureNote, metric, type ScenarioResult } from '../lib/report.ts'
import { serveOnLoopback, startStack, type BenchContext } from '../lib/stack.ts'

const SECRET = 'bench-signing-secret'

/** The outside service the workflow calls: a local HTTP server on loopback answering small JSON. */
async function startSink (ctx: BenchContext): Promise<string> {
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json' }).end('{"accepted":true}') })
  })
  return `${await serveOnLoopback(ctx, server)}/orders`
}

/** verify_signature → condition → set → http_request (to the sink) → set, started by signed inbound webhooks. */
function realisticNodes (sinkUrl: string): unknown[] {
  return [
    { id: 'verify', type: 'verify_signature', config: { secret: SECRET, header: 'x-signature', algorithm: 'sha256', encoding: 'hex', prefix: 'sha256=' }, next: 'check' },
    { id: 'check', type: 'condition', config: { field: 'triggerData.body.event', operator: 'equals', value: 'order.created', then: 'shape', else: 'skipped' } },
    { id: 'shape', type: 'set', config: { values: { orderId: '{{triggerData.body.data.id}}', phone: '{{triggerData.body.data.phone}}' } }, next: 'notify' },
    { id: 'notify', type: 'http_request', config: { method: 'POST', url: sinkUrl, body: { orderId: '{{shape.orderId}}', phone: '{{shape.phone}}' } }, next: 'done' },
    { id: 'done', type: 'set', config: { values: { status: '{{notify.status}}' } } },
    { id: 'skipped', type: 'set', config: { values: { status: 'skipped' } } }
  ]
}

export async function realisticWorkflow (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const sinkUrl = await startSink(ctx)
  // The sink is on loopback, which the SSRF guard refuses unless private targets are allowed.
  const stack = await startStack(ctx, 'C', { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
  const { load, runs, costs } = await measureWebhookPipeline(ctx, stack, 'C', realisticNodes(sinkUrl), {
    headers: (body) => ({ 'x-signature': `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}` })
  })
  return {
    id: 'C',
    title: 'realistic workflow (5 nodes, one http_request)',
    metrics: [
      metric('completed runs/s', runs.runsPerSecond, 'runs/s', { op: '>=', value: 800 }),
      metric('request → SUCCESS p50', runs.p50Ms, 'ms'),
      metric('request → SUCCESS p99', runs.p99Ms, 'ms'),
      metric('webhook answers/s', load.requestsPerSecond, 'req/s'),
      ...costs.metrics
    ],
    notes: [
      `WAL records per run: ${costs.walKinds}`,
      ...failureNote('webhook load', load),
      ...(runs.unfinished + runs.notSuccess > 0 ? [`${runs.unfinished} runs unfinished, ${runs.notSuccess} not SUCCESS`] : [])
    ]
  }
}
