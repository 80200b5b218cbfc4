import type { SampleField } from '../builder.ts'

/** A value as one short line. */
function glimpse (value: unknown): string {
  const text = JSON.stringify(value) ?? 'undefined'
  return text.length > 40 ? `${text.slice(0, 39)}…` : text
}

interface DataPickerProps {
  id: string
  /** What the field may read, from the run shown or the pinned data. */
  fields: SampleField[]
  onPick: (path: string) => void
  onClose: () => void
}

/**
 * The data picker of a template field (README, The workflow builder): the trigger's data and the
 * outputs of the nodes before this one, each with its value in the sample. A click inserts its
 * placeholder at the cursor; each can also be dragged into any field, which drops its placeholder
 * where it lands.
 */
export function DataPicker ({ id, fields, onPick, onClose }: DataPickerProps) {
  return (
    <div class='data-picker' id={id} role='group' aria-label='Data to insert' onKeyDown={(event) => { if (event.key === 'Escape') onClose() }}>
      {fields.length <= 1 && <p class='muted small'>Pin data or open a run to pick from what a trigger sends and what nodes return.</p>}
      <ul>
        {fields.map((field) => (
          <li key={field.path} style={{ paddingLeft: `${(field.depth - 1) * 12}px` }}>
            <button
              type='button' class='data-field' draggable
              onDragStart={(event) => { event.dataTransfer?.setData('text/plain', `{{${field.path}}}`) }}
              onClick={() => { onPick(field.path) }}
            >
              <code>{field.path.split('.').at(-1)}</code> <span class='muted small'>{glimpse(field.value)}</span>
              <span class='visually-hidden'> ({field.path})</span>
            </button>
          </li>
        ))}
      </ul>
    </div>
  )
}
