import { waitFor } from './processes.ts'

export interface Credentials { email: string, password: string }

async function call (baseUrl: string, method: string, path: string, token?: string, body?: unknown): Promise<{ status: number, body: any }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...(token !== undefined && { authorization: `Bearer ${token}` })
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000)
  })
  const text = await res.text()
  try {
    return { status: res.status, body: JSON.parse(text) }
  } catch {
    return { status: res.status, body: text }
  }
}

function expect (what: string, res: { status: number, body: unknown }, status: number): void {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`)
}

/**
 * What an operator checks after a deployment, through the front door of a running
 * api and worker: log in, create a MANUAL workflow, fire it, and wait until the run
 * ends SUCCESS with the node's output. Throws, saying which step failed, otherwise.
 */
export async function completeOneRun (baseUrl: string, admin: Credentials, { timeoutMs = 30_000 } = {}): Promise<{ workflowId: string, runId: string }> {
  const login = await call(baseUrl, 'POST', '/api/auth/login', undefined, admin)
  expect('login', login, 200)
  const token = login.body.token as string

  const created = await call(baseUrl, 'POST', '/api/automation/workflows', token, {
    name: 'deployment check',
    triggerType: 'MANUAL',
    isActive: true,
    nodes: [{ id: 'greet', type: 'set', config: { values: { greeting: 'hello {{triggerData.name}}' } } }]
  })
  expect('create workflow', created, 201)
  const workflowId = created.body.id as string

  const fired = await call(baseUrl, 'POST', `/api/automation/workflows/${workflowId}/fire`, token, { name: 'operator' })
  expect('fire', fired, 202)
  const runId = fired.body.runId as string

  const run = await waitFor(async () => {
    const res = await call(baseUrl, 'GET', `/api/automation/runs/${runId}`, token)
    expect('read run', res, 200)
    return ['SUCCESS', 'FAILED', 'CANCELLED'].includes(res.body.status) ? res.body : undefined
  }, { timeoutMs, intervalMs: 100, what: `run ${runId} to finish` })
  if (run.status !== 'SUCCESS' || run.result?.greet?.greeting !== 'hello operator') {
    throw new Error(`run ${runId} ended ${run.status}: ${JSON.stringify({ error: run.error, result: run.result })}`)
  }
  return { workflowId, runId }
}
