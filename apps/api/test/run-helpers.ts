import type { TestApp } from './helper.ts'

interface WorkflowInput {
  name?: string
  triggerType: string
  triggerConfig?: Record<string, unknown>
  isActive?: boolean
}

/** Creates a workflow through the API and returns its id. */
export async function createWorkflow (app: Pick<TestApp, 'request'>, token: string, input: WorkflowInput): Promise<string> {
  const res = await app.request({
    method: 'POST',
    url: '/api/automation/workflows',
    token,
    payload: { name: 'test workflow', isActive: true, nodes: [{ id: 'n1', type: 'set', config: { values: { a: '1' } } }], ...input }
  })
  if (res.statusCode !== 201) throw new Error(`workflow creation failed: ${res.body}`)
  return res.json().id
}
