import { TRIGGER_TYPE_CHOICES, type TriggerType, type Workflow, type WorkflowInput } from '../types.ts'
import { CopyField } from './ui.tsx'

/** A workflow's trigger as its form holds it: the text typed in each field, turned into `triggerConfig` when saved. */
export interface TriggerDraft {
  triggerType: TriggerType
  cronExpression: string
  timezone: string
  eventName: string
  keywords: string
  match: string
  /** Trigger settings the form has no field for, kept as they were. */
  otherConfig: Record<string, unknown>
}

export const EMPTY_TRIGGER: TriggerDraft = {
  triggerType: 'MANUAL',
  cronExpression: '',
  timezone: 'UTC',
  eventName: '',
  keywords: '',
  match: 'contains',
  otherConfig: {}
}

export const commaList = (text: string): string[] => text.split(',').map((item) => item.trim()).filter((item) => item !== '')

export function triggerDraftOf (workflow: Pick<Workflow, 'triggerType' | 'triggerConfig'>): TriggerDraft {
  const { cronExpression, timezone, eventName, keywords, match, ...otherConfig } = workflow.triggerConfig
  return {
    triggerType: workflow.triggerType,
    cronExpression: typeof cronExpression === 'string' ? cronExpression : '',
    timezone: typeof timezone === 'string' ? timezone : 'UTC',
    eventName: typeof eventName === 'string' ? eventName : '',
    keywords: Array.isArray(keywords) ? keywords.join(', ') : '',
    match: typeof match === 'string' ? match : 'contains',
    otherConfig
  }
}

/** The draft as the API takes it: the trigger type and the config fields of that type. */
export function triggerInputOf (draft: TriggerDraft): Pick<WorkflowInput, 'triggerType' | 'triggerConfig'> {
  const triggerConfig: Record<string, unknown> = { ...draft.otherConfig }
  if (draft.triggerType === 'CRON') {
    if (draft.cronExpression.trim() !== '') triggerConfig.cronExpression = draft.cronExpression.trim()
    triggerConfig.timezone = draft.timezone.trim() === '' ? 'UTC' : draft.timezone.trim()
  }
  if (draft.triggerType === 'EVENT') triggerConfig.eventName = draft.eventName.trim()
  if (draft.triggerType === 'KEYWORD') Object.assign(triggerConfig, { keywords: commaList(draft.keywords), match: draft.match })
  return { triggerType: draft.triggerType, triggerConfig }
}

interface TriggerFieldsProps {
  draft: TriggerDraft
  onChange: (draft: TriggerDraft) => void
  /** The inbound webhook's address, once the workflow exists. */
  webhookUrl: string | undefined
}

/** The trigger's type and the fields of that type: the workflow editor's Trigger card and the builder's trigger panel. */
export function TriggerFields ({ draft, onChange, webhookUrl }: TriggerFieldsProps) {
  const set = <K extends keyof TriggerDraft>(key: K, value: TriggerDraft[K]): void => { onChange({ ...draft, [key]: value }) }
  return (
    <>
      <label for='wf-trigger'>Trigger type</label>
      <select id='wf-trigger' value={draft.triggerType} onChange={(e) => { set('triggerType', e.currentTarget.value as TriggerType) }}>
        {TRIGGER_TYPE_CHOICES.map((type) => <option key={type}>{type}</option>)}
      </select>
      {draft.triggerType === 'CRON' && (
        <>
          <label for='wf-cron'>Cron expression (5 fields, or 6 with seconds first)</label>
          <input id='wf-cron' class='mono' placeholder='0 9 * * 1-5' value={draft.cronExpression} onInput={(e) => { set('cronExpression', e.currentTarget.value) }} />
          <label for='wf-timezone'>Timezone (IANA)</label>
          <input id='wf-timezone' value={draft.timezone} onInput={(e) => { set('timezone', e.currentTarget.value) }} />
        </>
      )}
      {draft.triggerType === 'EVENT' && (
        <>
          <label for='wf-event'>Event name</label>
          <input id='wf-event' placeholder='client.created' value={draft.eventName} onInput={(e) => { set('eventName', e.currentTarget.value) }} />
        </>
      )}
      {draft.triggerType === 'KEYWORD' && (
        <>
          <label for='wf-keywords'>Keywords (comma-separated)</label>
          <input id='wf-keywords' value={draft.keywords} onInput={(e) => { set('keywords', e.currentTarget.value) }} />
          <label for='wf-match'>Match</label>
          <select id='wf-match' value={draft.match} onChange={(e) => { set('match', e.currentTarget.value) }}>
            <option value='contains'>contains</option><option value='exact'>exact</option><option value='startsWith'>startsWith</option>
          </select>
        </>
      )}
      {draft.triggerType === 'WEBHOOK' && (webhookUrl === undefined
        ? <p class='muted'>Its URL is shown once the workflow is saved.</p>
        : <CopyField id='webhook-url' label='Webhook URL (POST any body; public, no token)' value={webhookUrl} />)}
      {(draft.triggerType === 'MANUAL' || draft.triggerType === 'AGENT') && <p class='muted'>Started by firing it, from its page or the API.</p>}
    </>
  )
}
