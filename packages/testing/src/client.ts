import { randomBytes } from 'node:crypto'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { waitFor } from './wait.ts'

/**
 * One client for the api in tests, whether the api runs in-process (`inject`) or as a
 * process of its own (HTTP): the steps tests repeat (log in, add a member, create a
 * workflow, fire it, wait for its run) written once, each throwing with the answer
 * when the api refuses, so that a test's own assertions stay about what it tests.
 */

export interface ApiRequest {
  method: string
  path: string
  token?: string
  /** Sent as JSON. */
  body?: unknown
  headers?: Record<string, string>
}

export interface ApiResponse {
  status: number
  /** The JSON body, or the text when it is not JSON. */
  body: any
  headers: Headers
}

/** How a request reaches the api. */
export type Transport = (request: ApiRequest) => Promise<ApiResponse>

const requestHeaders = ({ token, body, headers }: ApiRequest): Record<string, string> => ({
  ...(body !== undefined && { 'content-type': 'application/json' }),
  ...(token !== undefined && { authorization: `Bearer ${token}` }),
  ...headers
})

function parseBody (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** Requests over HTTP to a running api; `timeoutMs` bounds each request. */
export function httpTransport (baseUrl: string, { timeoutMs }: { timeoutMs?: number } = {}): Transport {
  return async (request) => {
    const res = await fetch(`${baseUrl}${request.path}`, {
      method: request.method,
      headers: requestHeaders(request),
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      ...(timeoutMs !== undefined && { signal: AbortSignal.timeout(timeoutMs) })
    })
    return { status: res.status, body: parseBody(await res.text()), headers: res.headers }
  }
}

/** Requests injected into an in-process api. */
export function injectTransport (app: Pick<FastifyInstance, 'inject'>): Transport {
  return async (request) => {
    const res = await app.inject({
      method: request.method as InjectOptions['method'],
      url: request.path,
      headers: requestHeaders(request),
      payload: request.body === undefined ? undefined : JSON.stringify(request.body)
    })
    const headers = new Headers()
    for (const [name, value] of Object.entries(res.headers)) {
      for (const item of [value ?? []].flat()) headers.append(name, String(item))
    }
    return { status: res.statusCode, body: parseBody(res.body), headers }
  }
}

export interface Credentials { email: string, password: string }

export interface TestUser { id: string, email: string, token: string }

/** A workflow as POST /api/automation/workflows takes it; what a test leaves out comes from WORKFLOW_DEFAULTS. */
export interface WorkflowInput {
  name?: string
  triggerType?: string
  triggerConfig?: Record<string, unknown>
  isActive?: boolean
  nodes?: unknown[]
  edges?: unknown
  maxConcurrentRuns?: number | null
  webhookRateLimit?: { max: number, windowSeconds: number } | null
  runTags?: string | null
  flowControl?: Record<string, unknown> | null
}

/** An active MANUAL workflow with one `set` node. */
export const WORKFLOW_DEFAULTS = {
  name: 'test workflow',
  triggerType: 'MANUAL',
  isActive: true,
  nodes: [{ id: 'n1', type: 'set', config: { values: { a: '1' } } }]
} as const satisfies WorkflowInput

/** A run as GET /api/automation/runs/:id answers it. */
export interface RunBody {
  id: string
  workflowId: string
  workflowVersion: number
  /** The run this one replays; null when it is not a replay. */
  retriedFrom: string | null
  status: string
  createdAt: string
  completedAt: string | null
  triggerData: Record<string, any>
  result: Record<string, any>
  error: string | null
  durationMs: number | null
  logs: Array<{ nodeId: string | null, level: string, message: string }>
}

/** A run as GET /api/automation/runs lists it. */
export type RunSummary = Omit<RunBody, 'logs'>

export const TERMINAL_RUN_STATUSES = ['SUCCESS', 'FAILED', 'CANCELLED']

export interface TestClient {
  call: (method: string, path: string, options?: Omit<ApiRequest, 'method' | 'path'>) => Promise<ApiResponse>
  /** Logs in and returns the token. */
  login: (credentials: Credentials) => Promise<string>
  /** A fresh user, created by an admin, logged in: tests never share users. */
  newUser: (adminToken: string, options?: { role?: 'admin' | 'member' }) => Promise<TestUser>
  /** Creates a workflow and returns its id. */
  createWorkflow: (token: string, input?: WorkflowInput) => Promise<string>
  /** Fires a workflow and returns the id of the run it started. */
  fire: (token: string, workflowId: string, triggerData?: unknown, options?: { headers?: Record<string, string> }) => Promise<string>
  getRun: (token: string, runId: string) => Promise<RunBody>
  /** Polls the run until its status is one of `statuses` (by default any terminal one) and returns it. */
  runReaching: (token: string, runId: string, statuses?: string[], options?: WaitOptions) => Promise<RunBody>
  /** Creates a workflow, fires it, and waits for its run to reach one of `statuses` (by default any terminal one). */
  runWorkflow: (token: string, input: WorkflowInput, triggerData?: unknown, options?: WaitOptions & { statuses?: string[] }) => Promise<RunBody>
  /** The workflow's runs, newest first. */
  runsOf: (token: string, workflowId: string, options?: { limit?: number }) => Promise<RunSummary[]>
  /** Polls until the workflow's newest run has one of `statuses` (by default any terminal one) and returns it. */
  latestRunReaching: (token: string, workflowId: string, statuses?: string[], options?: WaitOptions) => Promise<RunBody>
}

interface WaitOptions { timeoutMs?: number, intervalMs?: number }

function expectStatus (what: string, res: ApiResponse, status: number): void {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`)
}

export function createTestClient (transport: Transport): TestClient {
  const call: TestClient['call'] = async (method, path, options = {}) => transport({ method, path, ...options })

  const login: TestClient['login'] = async (credentials) => {
    const res = await call('POST', '/api/auth/login', { body: credentials })
    expectStatus('login', res, 200)
    return res.body.token
  }

  const getRun: TestClient['getRun'] = async (token, runId) => {
    const res = await call('GET', `/api/automation/runs/${runId}`, { token })
    expectStatus(`read run ${runId}`, res, 200)
    return res.body
  }

  const runsOf: TestClient['runsOf'] = async (token, workflowId, { limit } = {}) => {
    const res = await call('GET', `/api/automation/runs?workflowId=${workflowId}${limit === undefined ? '' : `&limit=${limit}`}`, { token })
    expectStatus(`list runs of ${workflowId}`, res, 200)
    return res.body
  }

  const client: TestClient = {
    call,
    login,
    newUser: async (adminToken, { role } = {}) => {
      const email = `${role ?? 'member'}-${randomBytes(8).toString('hex')}@example.com`
      const password = 'member-password'
      const res = await call('POST', '/api/users', { token: adminToken, body: { email, password, ...(role !== undefined && { role }) } })
      expectStatus('create user', res, 201)
      return { id: res.body.id, email, token: await login({ email, password }) }
    },
    createWorkflow: async (token, input = {}) => {
      const res = await call('POST', '/api/automation/workflows', { token, body: { ...WORKFLOW_DEFAULTS, ...input } })
      expectStatus('create workflow', res, 201)
      return res.body.id
    },
    fire: async (token, workflowId, triggerData = {}, { headers } = {}) => {
      const res = await call('POST', `/api/automation/workflows/${workflowId}/fire`, { token, body: triggerData, headers })
      expectStatus(`fire ${workflowId}`, res, 202)
      return res.body.runId
    },
    getRun,
    runReaching: async (token, runId, statuses = TERMINAL_RUN_STATUSES, { timeoutMs, intervalMs } = {}) => waitFor(async () => {
      const run = await getRun(token, runId)
      return statuses.includes(run.status) ? run : undefined
    }, { what: `run ${runId} to reach ${statuses.join('/')}`, timeoutMs, intervalMs }),
    runsOf,
    latestRunReaching: async (token, workflowId, statuses = TERMINAL_RUN_STATUSES, { timeoutMs, intervalMs } = {}) => waitFor(async () => {
      const [newest] = await runsOf(token, workflowId)
      if (newest === undefined) return undefined
      const run = await getRun(token, newest.id)
      return statuses.includes(run.status) ? run : undefined
    }, { what: `a run of ${workflowId} to reach ${statuses.join('/')}`, timeoutMs, intervalMs }),
    runWorkflow: async (token, input, triggerData, { statuses, ...wait } = {}) => {
      const runId = await client.fire(token, await client.createWorkflow(token, input), triggerData)
      return client.runReaching(token, runId, statuses, wait)
    }
  }
  return client
}
