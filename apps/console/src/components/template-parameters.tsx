import { api } from '../api.ts'
import { useData } from '../hooks.ts'
import { placeholderCount, templatePreview } from '../template-preview.ts'
import { isRecord } from '../records.ts'
import type { WorkflowNode } from '../types.ts'
import { TemplateText } from './template-text.tsx'

/** The texts of the body's parameters in a node's `components`, in order. */
function bodyValues (components: unknown): string[] {
  const body = Array.isArray(components) ? components.find((component) => isRecord(component) && String(component.type).toLowerCase() === 'body') : undefined
  const parameters = isRecord(body) && Array.isArray(body.parameters) ? body.parameters : []
  return parameters.map((parameter) => isRecord(parameter) && typeof parameter.text === 'string' ? parameter.text : '')
}

/** `components` with the body's parameters set to `values` (the other components kept as they are). */
function withBodyValues (components: unknown, values: string[]): unknown[] {
  const others = Array.isArray(components) ? components.filter((component) => !(isRecord(component) && String(component.type).toLowerCase() === 'body')) : []
  return [...others, { type: 'body', parameters: values.map((text) => ({ type: 'text', text })) }]
}

/**
 * A send_chat_template node's template picked from the approved ones, with a field for each of its
 * body's `{{n}}` (a value or a `{{template}}` of the run), written into the node's `components`, and
 * the message as the customer reads it. The node's `accountId`, when it names one, is the account
 * whose templates are listed.
 */
export function TemplateParameters ({ node, onChange }: { node: WorkflowNode, onChange: (config: Record<string, unknown>) => void }) {
  const config = node.config ?? {}
  const accountId = typeof config.accountId === 'string' && config.accountId !== '' && !config.accountId.includes('{{') ? config.accountId : undefined
  const templates = useData(async () => (await api.templates(accountId)).filter((template) => template.status === 'APPROVED'), [accountId])
  const chosen = templates.data?.find((template) => template.name === config.templateName && template.language === (config.lang ?? 'en_US'))
  const count = placeholderCount(chosen)
  const values = bodyValues(config.components)
  const setValue = (index: number, value: string): void => {
    const next = Array.from({ length: count }, (_, i) => i === index ? value : values[i] ?? '')
    onChange({ ...config, components: withBodyValues(config.components, next) })
  }
  if (templates.error !== undefined) return <p class='muted small'>The approved templates cannot be listed ({templates.error.message}): write the template's name and its components above.</p>
  return (
    <fieldset class='template-parameters'>
      <legend>Template and its values</legend>
      <label for='template-pick'>Approved template</label>
      <select
        id='template-pick' value={chosen === undefined ? '' : `${chosen.name}|${chosen.language}`} disabled={templates.data === undefined}
        onChange={(e) => { const [templateName, lang] = e.currentTarget.value.split('|'); onChange({ ...config, templateName, lang }) }}
      >
        <option value=''>{templates.data === undefined ? 'Loading templates…' : 'Choose a template'}</option>
        {(templates.data ?? []).map((template) => <option key={`${template.name}|${template.language}`} value={`${template.name}|${template.language}`}>{template.name} · {template.language}</option>)}
      </select>
      {Array.from({ length: count }, (_, i) => (
        <div key={i}>
          <label for={`template-value-${i + 1}`}>{`Value of {{${i + 1}}}`} <span class='muted'>(text, or a template such as {'{{triggerData.name}}'})</span></label>
          <input id={`template-value-${i + 1}`} value={values[i] ?? ''} onInput={(e) => { setValue(i, e.currentTarget.value) }} />
        </div>
      ))}
      {chosen !== undefined && <div class='template-preview' aria-label='The template as the customer reads it'><TemplateText preview={templatePreview(chosen, values)} /></div>}
    </fieldset>
  )
}
