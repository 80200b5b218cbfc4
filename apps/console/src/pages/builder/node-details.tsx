import { useEffect, useRef } from 'preact/hooks'
import type { ComponentChildren } from 'preact'
import { DataView } from '../../components/data-view.tsx'
import type { Run } from '../../types.ts'

interface NodeDetailsProps {
  nodeId: string
  /** What the node's templates may read: the trigger's data and the outputs of the nodes before it. */
  input: Record<string, unknown>
  /** The node's form (the Inspector), in the middle. */
  settings: ComponentChildren
  run: Run | undefined
  /** Why the node failed in the run shown (graph.ts `nodeErrorsOf`), if it did. */
  error: string | undefined
  onClose: () => void
}

/**
 * A node opened wide (README, The workflow builder): its input, its settings and its output side
 * by side over the canvas, the output's error first. Input and output are tables or JSON, and
 * their keys drag into the settings' fields as placeholders. Escape or Close goes back to the canvas.
 */
export function NodeDetails ({ nodeId, input, settings, run, error, onClose }: NodeDetailsProps) {
  const close = useRef<HTMLButtonElement>(null)
  useEffect(() => {
    close.current?.focus()
    const onKey = (event: KeyboardEvent): void => { if (event.key === 'Escape') onClose() }
    document.addEventListener('keydown', onKey)
    return () => { document.removeEventListener('keydown', onKey) }
  }, [])
  const ran = run !== undefined && nodeId in run.result
  return (
    <div class='node-details-backdrop'>
      <section class='node-details' role='dialog' aria-modal='true' aria-labelledby='node-details-title'>
        <header class='row'>
          <h2 id='node-details-title'>Node <code>{nodeId}</code>: input, settings and output</h2>
          <button type='button' ref={close} onClick={onClose}>Close</button>
        </header>
        <div class='node-details-columns'>
          <section aria-labelledby='node-details-input'>
            <h3 id='node-details-input'>Input</h3>
            <p class='muted small'>{run === undefined ? 'From the pinned data.' : `From run ${run.id}.`} Drag a key into a field to read it there.</p>
            <DataView label={`Input of ${nodeId} (side by side)`} value={input} path='' />
          </section>
          <section aria-labelledby='node-details-settings'>
            <h3 id='node-details-settings' class='visually-hidden'>Settings</h3>
            {settings}
          </section>
          <section aria-labelledby='node-details-output'>
            <h3 id='node-details-output'>Output</h3>
            {error !== undefined && <p class='notice error' role='alert'>{error}</p>}
            {ran
              ? <DataView label={`Output of ${nodeId} (side by side)`} value={run.result[nodeId]} path={nodeId} />
              : <p class='muted'>{run === undefined ? 'Run to here to see what it returns.' : 'It did not run in this run.'}</p>}
          </section>
        </div>
      </section>
    </div>
  )
}
