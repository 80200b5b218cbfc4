import { useEffect, useRef, useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { TriggerFields, type TriggerDraft } from '../../components/trigger-fields.tsx'
import { clock } from '../../format.ts'
import type { TestCapture } from '../../types.ts'

/** How often a listening builder asks whether the request came. */
const CAPTURE_POLL_MS = 500

const KIND: Record<TriggerDraft['triggerType'], string> = {
  MANUAL: 'Manual',
  WEBHOOK: 'Webhook',
  CRON: 'Schedule',
  EVENT: 'Event',
  KEYWORD: 'Chat keyword',
  AGENT: 'Agent'
}

/** What the canvas's trigger node says: its kind, and what sets it off (the webhook's URL, the cron expression, the keywords, the event). */
export function triggerSummaryOf (draft: TriggerDraft, webhookUrl: string): { kind: string, detail: string | undefined } {
  const kind = KIND[draft.triggerType]
  switch (draft.triggerType) {
    case 'WEBHOOK': return { kind, detail: webhookUrl }
    case 'CRON': return { kind, detail: draft.cronExpression.trim() === '' ? 'no expression yet' : `${draft.cronExpression.trim()} (${draft.timezone.trim() === '' ? 'UTC' : draft.timezone.trim()})` }
    case 'EVENT': return { kind, detail: draft.eventName.trim() === '' ? 'no event yet' : draft.eventName.trim() }
    case 'KEYWORD': return { kind, detail: draft.keywords.trim() === '' ? 'no keywords yet' : `${draft.match}: ${draft.keywords.trim()}` }
    default: return { kind, detail: undefined }
  }
}

/**
 * "Listen for a test request" (README, The workflow builder): arms the workflow's test capture and asks where it
 * stands until the request came or the window closed; a captured request goes to `onCaptured`, already stored as
 * the pinned data. Held by the builder, not its panel, so that it keeps listening while another node is selected.
 */
export function useTestCapture (workflowId: string, onCaptured: (pinnedData: unknown) => void, onError: (error: Error) => void): { capture: TestCapture | undefined, listen: () => Promise<void> } {
  const [capture, setCapture] = useState<TestCapture>()
  const handlers = useRef({ onCaptured, onError })
  handlers.current = { onCaptured, onError }
  // Each answer is a new object: while armed, the next question follows it.
  useEffect(() => {
    if (capture?.state !== 'armed') return
    let live = true
    const timer = setTimeout(() => {
      api.testCapture(workflowId).then((now) => {
        if (!live) return
        setCapture(now)
        if (now.state === 'captured') handlers.current.onCaptured(now.pinnedData)
      }, (err: unknown) => { if (live) handlers.current.onError(err as Error) })
    }, CAPTURE_POLL_MS)
    return () => {
      live = false
      clearTimeout(timer)
    }
  }, [capture, workflowId])
  const listen = async (): Promise<void> => { setCapture(await api.listenForTestRequest(workflowId)) }
  return { capture, listen }
}

interface ListenProps {
  capture: TestCapture | undefined
  webhookUrl: string
  isActive: boolean
  onListen: () => void
}

/** The button that listens for a test request, and where listening stands. */
function ListenForTestRequest ({ capture, webhookUrl, isActive, onListen }: ListenProps) {
  const armed = capture?.state === 'armed'
  return (
    <section aria-labelledby='listen-title'>
      <h4 id='listen-title'>Test request</h4>
      <p class='muted small'>
        The next request to the webhook becomes the pinned data, as a real run reads it (<code>{'{{triggerData.body.…}}'}</code>), without its <code>authorization</code> and <code>cookie</code> headers.
        {isActive ? ' Being active, the workflow also runs it.' : ' Inactive, the workflow does not run it.'}
      </p>
      <button type='button' disabled={armed} onClick={onListen}>Listen for a test request</button>
      <p role='status' class='small' id='listen-status'>
        {capture?.state === 'armed' && capture.until !== null && <>Waiting for a request to <code>{webhookUrl}</code> (until {clock(capture.until, true)})</>}
        {capture?.state === 'expired' && 'No request came in time: listen again.'}
        {capture?.state === 'captured' && capture.capturedAt !== null && `Captured the request of ${clock(capture.capturedAt, true)}: it is the pinned data below.`}
      </p>
    </section>
  )
}

interface TriggerPanelProps {
  draft: TriggerDraft
  onChange: (draft: TriggerDraft) => void
  webhookUrl: string
  isActive: boolean
  capture: TestCapture | undefined
  onListen: () => void
}

/** The side panel of the canvas's trigger node: the workflow's trigger settings, saved with the nodes; a webhook's test request. */
export function TriggerPanel ({ draft, onChange, webhookUrl, isActive, capture, onListen }: TriggerPanelProps) {
  return (
    <section class='trigger-panel' aria-labelledby='trigger-title'>
      <h3 id='trigger-title'>Trigger</h3>
      <p class='muted small'>What starts the workflow; it runs the node the trigger links to first. Saved with the nodes.</p>
      <TriggerFields draft={draft} onChange={onChange} webhookUrl={webhookUrl} />
      {draft.triggerType === 'WEBHOOK' && <ListenForTestRequest capture={capture} webhookUrl={webhookUrl} isActive={isActive} onListen={onListen} />}
    </section>
  )
}
