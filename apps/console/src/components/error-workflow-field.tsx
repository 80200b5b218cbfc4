import { useState } from 'preact/hooks'
import { api } from '../api.ts'
import { useAction, useData } from '../hooks.ts'
import { paths } from '../paths.ts'

interface ErrorWorkflowFieldProps {
  /** The workflow being edited; absent while it is being created. */
  workflowId?: string
  /** The chosen error workflow's id, '' for none. */
  value: string
  onPick: (errorWorkflowId: string) => void
}

/** The example's message: a send_chat node's text reads the failed run from triggerData.run (README, Error workflows). */
const EXAMPLE_TEXT = 'Workflow {{triggerData.run.workflowName}} failed: {{triggerData.run.error}}'

/**
 * The setting errorWorkflowId (README, Error workflows): one of the user's other workflows, CRON
 * workflows excepted, or none; or a new one made on the spot that sends the user a WhatsApp
 * message, MANUAL and inactive (an error workflow is called, not triggered). A value that is none
 * of them (a workflow the list does not hold) stays selectable as it is.
 */
export function ErrorWorkflowField ({ workflowId, value, onPick }: ErrorWorkflowFieldProps) {
  const workflows = useData(async () => await api.workflows({ limit: 500 }), [])
  const [phone, setPhone] = useState('')
  const candidates = (workflows.data ?? []).filter((workflow) => workflow.triggerType !== 'CRON' && workflow.id !== workflowId)
  const known = candidates.some((workflow) => workflow.id === value)
  const createExample = useAction(async () => {
    const created = await api.createWorkflow({
      name: 'Send me a WhatsApp message when a workflow fails',
      description: null,
      triggerType: 'MANUAL',
      triggerConfig: {},
      domain: 'GENERAL',
      tags: [],
      isActive: false,
      nodes: [{ id: 'tell_me', type: 'send_chat', config: { phone: phone.trim(), text: EXAMPLE_TEXT } }],
      edges: null
    })
    workflows.reload()
    onPick(created.id)
  })
  const error = createExample.error ?? workflows.error
  return (
    <>
      <label for='wf-error-workflow'>Error workflow</label>
      <select id='wf-error-workflow' aria-describedby='wf-error-workflow-help' value={value} onChange={(e) => { onPick(e.currentTarget.value) }}>
        <option value=''>{workflows.data === undefined ? 'Loading workflows…' : 'None'}</option>
        {candidates.map((workflow) => <option key={workflow.id} value={workflow.id}>{workflow.name}</option>)}
        {value !== '' && !known && <option value={value}>{`${value} (not in the list)`}</option>}
      </select>
      <p class='small muted' id='wf-error-workflow-help'>
        Started once, active or not, when a run of this workflow fails, with the failed run as <code>{'{{triggerData.run}}'}</code>:
        its <code>id</code>, <code>workflowName</code>, <code>error</code>, <code>failedNodeId</code>, <code>triggerData</code> and <code>startedAt</code>.
        Test runs, child runs and the error workflow's own runs start none.
      </p>
      {known && <p class='small'><a href={paths.builder(value)}>Open the error workflow in the builder</a></p>}
      <details>
        <summary>Example: send me a WhatsApp message</summary>
        <label for='wf-error-phone'>Your phone number</label>
        <div class='row'>
          <input id='wf-error-phone' type='tel' placeholder='+15551234567' value={phone} onInput={(e) => { setPhone(e.currentTarget.value) }} />
          <button type='button' disabled={createExample.busy || phone.trim() === ''} onClick={() => { createExample.run() }}>Create and choose it</button>
        </div>
        <p class='small muted'>A workflow with one <code>send_chat</code> node: <code>{EXAMPLE_TEXT}</code>. Free text reaches you inside the 24-hour window; otherwise use a template node.</p>
      </details>
      {error !== undefined && <p class='field-error' role='alert'>{error.message}</p>}
    </>
  )
}
