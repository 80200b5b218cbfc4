import { useEffect, useRef, useState } from 'preact/hooks'
import type { SampleField } from '../builder.ts'
import { fieldsOf, fieldState, parseField, textOf, withValue, type ConfigField, type FieldEdit } from '../nodes.ts'
import { DataPicker } from './data-picker.tsx'
import type { NodeTypeInfo, WorkflowNode } from '../types.ts'
import { WorkflowPicker } from './workflow-picker.tsx'

interface ConfigFormProps {
  nodeType: NodeTypeInfo
  node: WorkflowNode
  onChange: (config: Record<string, unknown>) => void
  /** How many fields are in error, each time that changes (0 when the form goes): the editor holds the save meanwhile. */
  onErrors: (count: number) => void
  /** More values to suggest for a text field (the builder's credential names). */
  suggestionsFor?: (field: string) => string[]
  /** The builder's help with templates: with it, each template field has a data picker and a preview. */
  templates?: TemplateHelp
}

/** What a node's templates may read (from the run shown or the pinned data), and what a value renders to against it. */
export interface TemplateHelp {
  fields: SampleField[]
  preview: (value: unknown) => string
}

const readsTemplates = (value: unknown): boolean => JSON.stringify(value ?? null).includes('{{')

/** A textarea as tall as its text and one more line, within bounds. */
const rows = (text: string, min: number, max: number): number => Math.min(max, Math.max(min, text.split('\n').length + 1))

/**
 * A node's config as a form built from its type's schema (nodes.ts): one labelled control per
 * field, its description as help. Only valid values reach the config; what does not parse stays
 * in its control with the error. Keys the schema does not name are kept as they are. Keyed by the
 * node's id where it is used: what was typed belongs to one node.
 */
export function ConfigForm ({ nodeType, node, onChange, onErrors, suggestionsFor, templates }: ConfigFormProps) {
  const [edits, setEdits] = useState<Record<string, FieldEdit>>({})
  /** The field whose data picker is open. */
  const [picking, setPicking] = useState<string>()
  const controls = useRef(new Map<string, HTMLInputElement | HTMLTextAreaElement>())
  const config = node.config ?? {}
  const states = fieldsOf(nodeType).map((field) => fieldState(field, config[field.name], edits[field.name]))
  const errors = states.filter((state) => state.error !== undefined).length
  useEffect(() => { onErrors(errors) }, [errors])
  useEffect(() => () => { onErrors(0) }, [])
  const others = Object.keys(config).filter((key) => nodeType.configSchema.properties?.[key] === undefined)

  const edit = (field: ConfigField, text: string, badInput = false): void => {
    const before = config[field.name]
    const parsed = badInput ? undefined : parseField(field, text)
    const value = parsed !== undefined && 'value' in parsed ? parsed.value : before
    if (JSON.stringify(value) !== JSON.stringify(before)) onChange(withValue(config, field.name, value))
    setEdits((current) => ({ ...current, [field.name]: { text, basis: JSON.stringify(value), badInput } }))
  }
  /** Puts `{{path}}` at the field's cursor (over the `{{` typed to open the picker), and the cursor after it. */
  const insert = (field: ConfigField, path: string): void => {
    const control = controls.current.get(field.name)
    const text = control?.value ?? ''
    let start = control?.selectionStart ?? text.length
    const end = control?.selectionEnd ?? start
    if (text.slice(Math.max(0, start - 2), start) === '{{') start -= 2
    edit(field, `${text.slice(0, start)}{{${path}}}${text.slice(end)}`)
    setPicking(undefined)
    const caret = start + path.length + 4
    requestAnimationFrame(() => { control?.focus(); control?.setSelectionRange(caret, caret) })
  }

  return (
    <fieldset class='config-form'>
      <legend>Config of <code>{node.id}</code> ({nodeType.type})</legend>
      <p class='muted'>{nodeType.description}</p>
      <p class='muted small'>Fields marked <span aria-hidden='true'>*</span> are required; an empty field is left out and its default (shown greyed) applies; greyed text after “e.g.” is an example, never saved.</p>
      {states.map(({ field, text, error }) => {
        const id = `cfg-${field.name}`
        const help = field.description !== undefined || field.templated
        const control = {
          id,
          'aria-describedby': [help ? `${id}-help` : '', error === undefined ? '' : `${id}-error`].filter((part) => part !== '').join(' ') || undefined,
          'aria-invalid': error === undefined ? undefined : true,
          'aria-required': field.required ? true : undefined
        }
        const placeholder = field.default !== undefined ? textOf(field, field.default) : field.example !== undefined ? `e.g. ${textOf(field, field.example)}` : undefined
        const label = <>{field.name}{field.required && <span class='required' aria-hidden='true'> *</span>}</>
        const picksWorkflow = field.kind === 'text' && field.name === nodeType.traits.callsWorkflow
        const rendered = nodeType.traits.templateFields === 'every' || nodeType.traits.templateFields.includes(field.name)
        const pickable = templates !== undefined && rendered && ['text', 'textarea', 'json'].includes(field.kind) && !picksWorkflow
        const onText = (e: { currentTarget: HTMLInputElement | HTMLTextAreaElement }): void => {
          const { value: typed, selectionStart } = e.currentTarget
          edit(field, typed)
          // Typing `{{` in a template field opens its picker.
          if (pickable && selectionStart !== null && typed.slice(Math.max(0, selectionStart - 2), selectionStart) === '{{') setPicking(field.name)
        }
        const remember = (element: HTMLInputElement | HTMLTextAreaElement | null): void => { if (element !== null) controls.current.set(field.name, element) }
        return (
          <div class='config-field' key={field.name} data-field={field.name}>
            {field.kind === 'boolean'
              ? (
                <label class='check' for={id}>
                  <input type='checkbox' {...control} checked={(config[field.name] ?? field.default) === true} onChange={(e) => { onChange(withValue(config, field.name, e.currentTarget.checked)) }} />
                  {label}
                </label>
                )
              : <label for={id}>{label}</label>}
            {field.kind === 'number' && (
              <input
                type='number' {...control} placeholder={placeholder} min={field.minimum} max={field.maximum} step={field.integer === true ? 1 : 'any'} value={text}
                onInput={(e) => { edit(field, e.currentTarget.value, e.currentTarget.validity.badInput) }}
              />
            )}
            {picksWorkflow && (
              <WorkflowPicker id={id} aria-describedby={control['aria-describedby']} value={config[field.name]} nodeId={node.id} onPick={(workflowId) => { onChange(withValue(config, field.name, workflowId)) }} />
            )}
            {field.kind === 'text' && !picksWorkflow && (() => {
              const suggestions = [...field.suggestions, ...(suggestionsFor?.(field.name) ?? [])]
              return (
                <>
                  <input {...control} ref={remember} placeholder={placeholder} list={suggestions.length > 0 ? `${id}-options` : undefined} value={text} onInput={onText} />
                  {suggestions.length > 0 && <datalist id={`${id}-options`}>{suggestions.map((option) => <option key={option} value={option} />)}</datalist>}
                </>
              )
            })()}
            {field.kind === 'textarea' && <textarea {...control} ref={remember} placeholder={placeholder} rows={rows(text, 2, 8)} value={text} onInput={onText} />}
            {field.kind === 'code' && <textarea {...control} class='mono code-field' rows={16} spellcheck={false} placeholder={placeholder} value={text} onInput={onText} />}
            {field.kind === 'json' && <textarea {...control} ref={remember} placeholder={placeholder} class='mono' rows={rows(text, 3, 12)} spellcheck={false} value={text} onInput={onText} />}
            {pickable && (
              <button
                type='button' class='small' aria-expanded={picking === field.name} aria-controls={`${id}-picker`}
                onClick={() => { setPicking(picking === field.name ? undefined : field.name) }}
              >Insert data into {field.name}
              </button>
            )}
            {pickable && picking === field.name && <DataPicker id={`${id}-picker`} fields={templates.fields} onPick={(path) => { insert(field, path) }} onClose={() => { setPicking(undefined) }} />}
            {pickable && error === undefined && readsTemplates(config[field.name]) && (
              <p class='template-preview small' aria-label={`Preview of ${field.name}`}>Preview: <code>{templates.preview(config[field.name])}</code></p>
            )}
            {help && (
              <p class='field-help' id={`${id}-help`}>
                {field.description}
                {field.templated && <span class='hint'>value or {'{{template}}'}</span>}
              </p>
            )}
            {error !== undefined && <p class='field-error' id={`${id}-error`} role='alert'>{error}</p>}
          </div>
        )
      })}
      {others.length > 0 && (
        <p class='muted small'>
          Also in this config, kept as they are (edit them in the JSON view): <code>{others.join(', ')}</code>.
        </p>
      )}
    </fieldset>
  )
}
