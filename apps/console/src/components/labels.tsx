import { useState } from 'preact/hooks'
import { ErrorNotice } from './ui.tsx'
import { useAction } from '../hooks.ts'

interface LabelEditorProps {
  /** What carries the labels, for the controls' names: `conversation`, `contact`. */
  of: string
  labels: string[]
  /** The number's labels, offered as the user types (GET /api/chat/labels). */
  known: string[]
  add: (label: string) => Promise<void>
  remove: (label: string) => Promise<void>
}

/**
 * A conversation's or a contact's labels as chips, each removed by its ×, and one added by typing it
 * (the number's labels offered): one label at a time through the api, so that two people labelling
 * at once keep each other's (README, The team inbox: labels).
 */
export function LabelEditor ({ of, labels, known, add, remove }: LabelEditorProps) {
  const [typed, setTyped] = useState('')
  const adding = useAction(async () => {
    const label = typed.trim()
    if (label === '') return
    await add(label)
    setTyped('')
  })
  const removing = useAction(remove)
  const listId = `known-labels-${of}`
  return (
    <div class='labels' data-labels-of={of}>
      <ul class='label-chips' aria-label={`Labels of the ${of}`}>
        {labels.map((label) => (
          <li key={label} class='tag'>
            {label}
            <button type='button' class='chip-remove' aria-label={`Remove the label ${label} from the ${of}`} disabled={removing.busy} onClick={() => { removing.run(label) }}>×</button>
          </li>
        ))}
      </ul>
      <form class='row' onSubmit={(event) => { event.preventDefault(); adding.run() }}>
        <input aria-label={`Add a label to the ${of}`} list={listId} maxLength={50} placeholder='Add a label' value={typed} onInput={(e) => { setTyped(e.currentTarget.value) }} />
        <datalist id={listId}>{known.filter((label) => !labels.includes(label)).map((label) => <option key={label} value={label} />)}</datalist>
        <button type='submit' disabled={adding.busy || typed.trim() === ''}>Add label</button>
      </form>
      <ErrorNotice error={adding.error ?? removing.error} />
    </div>
  )
}
