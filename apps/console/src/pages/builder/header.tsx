import { PageTitle } from '../../components/ui.tsx'

interface BuilderHeaderProps {
  /** The name as edited: saved with the nodes. */
  name: string
  onName: (name: string) => void
  isActive: boolean
  /** Activation waits while a save or another activation is under way, or while a field the save would send is invalid. */
  activationBlocked: boolean
  onActivate: (isActive: boolean) => void
}

/** The builder's title: the workflow's name, edited in place, and whether it is active, switched here. */
export function BuilderHeader ({ name, onName, isActive, activationBlocked, onActivate }: BuilderHeaderProps) {
  return (
    <PageTitle actions={
      <>
        <span class={`badge ${isActive ? 'ok' : 'off'}`} id='workflow-activity'>{isActive ? 'Active' : 'Inactive'}</span>
        <button type='button' disabled={activationBlocked} aria-describedby='workflow-activity' onClick={() => { onActivate(!isActive) }}>{isActive ? 'Deactivate' : 'Activate'}</button>
      </>
    }
    >
      <input class='title-input' aria-label='Workflow name' required maxLength={200} value={name} onInput={(e) => { onName(e.currentTarget.value) }} />
    </PageTitle>
  )
}
