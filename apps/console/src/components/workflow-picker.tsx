import { api } from '../api.ts'
import { useAction, useData } from '../hooks.ts'
import { paths } from '../paths.ts'

interface WorkflowPickerProps {
  /** The select's id, for its label. */
  id: string
  /** The field's value: a workflow id, a template, or nothing yet. */
  value: unknown
  /** The node that calls the workflow: a new sub-workflow is named after it. */
  nodeId: string
  onPick: (workflowId: string | undefined) => void
  'aria-describedby'?: string
}

/**
 * The workflow a run_workflow or foreach node calls (its type's `callsWorkflow` field): one of the
 * user's workflows by name (CRON workflows cannot be called), or a new empty one made on the spot
 * ("Create a sub-workflow", MANUAL and inactive, which a call does not need). A value that is
 * none of them (a template, an id of a workflow gone) stays selectable as it is.
 */
export function WorkflowPicker ({ id, value, nodeId, onPick, ...described }: WorkflowPickerProps) {
  const workflows = useData(async () => await api.workflows({ limit: 500 }), [])
  const callable = (workflows.data ?? []).filter((workflow) => workflow.triggerType !== 'CRON')
  const current = typeof value === 'string' ? value : ''
  const known = callable.some((workflow) => workflow.id === current)
  const create = useAction(async () => {
    const created = await api.createWorkflow({ name: `${nodeId} (sub-workflow)`, description: null, triggerType: 'MANUAL', triggerConfig: {}, domain: 'GENERAL', tags: [], isActive: false, nodes: [], edges: null })
    workflows.reload()
    onPick(created.id)
  })
  return (
    <>
      <div class='row'>
        <select id={id} {...described} value={current} onChange={(e) => { onPick(e.currentTarget.value === '' ? undefined : e.currentTarget.value) }}>
          <option value=''>{workflows.data === undefined ? 'Loading workflows…' : 'Choose a workflow'}</option>
          {callable.map((workflow) => <option key={workflow.id} value={workflow.id}>{workflow.name}</option>)}
          {current !== '' && !known && <option value={current}>{current.includes('{{') ? `${current} (a template)` : `${current} (not one of your workflows)`}</option>}
        </select>
        <button type='button' disabled={create.busy} onClick={() => { create.run() }}>Create a sub-workflow</button>
      </div>
      {known && <p class='small'><a href={paths.builder(current)}>Open the workflow it calls in the builder</a></p>}
      {(create.error ?? workflows.error) !== undefined && <p class='field-error' role='alert'>{(create.error ?? workflows.error)!.message}</p>}
    </>
  )
}
