import { createTestClient, httpTransport, type Credentials } from './client.ts'

/**
 * What an operator checks after a deployment, through the front door of a running
 * api and worker: log in, create a MANUAL workflow, fire it, and wait until the run
 * ends SUCCESS with its nodes' outputs, a code node's (run on the worker's sandbox
 * threads, README, Code) included. Throws, saying which step failed, otherwise.
 */
export async function completeOneRun (baseUrl: string, admin: Credentials, { timeoutMs = 30_000 } = {}): Promise<{ workflowId: string, runId: string }> {
  const client = createTestClient(httpTransport(baseUrl, { timeoutMs: 10_000 }))
  const token = await client.login(admin)
  const run = await client.runWorkflow(token, {
    name: 'deployment check',
    nodes: [
      { id: 'greet', type: 'set', config: { values: { greeting: 'hello {{triggerData.name}}' } }, next: 'shout' },
      { id: 'shout', type: 'code', config: { code: 'return input.greet.greeting.toUpperCase()' } }
    ]
  }, { name: 'operator' }, { timeoutMs, intervalMs: 100 })
  if (run.status !== 'SUCCESS' || run.result?.greet?.greeting !== 'hello operator' || run.result?.shout !== 'HELLO OPERATOR') {
    throw new Error(`run ${run.id} ended ${run.status}: ${JSON.stringify({ error: run.error, result: run.result })}`)
  }
  return { workflowId: run.workflowId, runId: run.id }
}
