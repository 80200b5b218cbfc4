import { useEffect, useState } from 'preact/hooks'
import { fieldsOf, fieldState, parseField, textOf, withValue, type ConfigField, type FieldEdit } from '../nodes.ts'
import type { NodeTypeInfo, WorkflowNode } from '../types.ts'

interface ConfigFormProps {
  nodeType: NodeTypeInfo
  node: WorkflowNode
  onChange: (config: Record<string, unknown>) => void
  /** How many fields are in error, each time that changes (0 when the form goes): the editor holds the save meanwhile. */
  onErrors: (count: number) => void
  /** More values to suggest for a text field (the builder's credential names and template paths). */
  suggestionsFor?: (field: string, templated: boolean) => string[]
}

/** A textarea as tall as its text and one more line, within bounds. */
const rows = (text: string, min: number, max: number): number => Math.min(max, Math.max(min, text.split('\n').length + 1))

/**
 * A node's config as a form built from its type's schema (nodes.ts): one labelled control per
 * field, its description as help. Only valid values reach the config; what does not parse stays
 * in its control with the error. Keys the schema does not name are kept as they are. Keyed by the
 * node's id where it is used: what was typed belongs to one node.
 */
export function ConfigForm ({ nodeType, node, onChange, onErrors, suggestionsFor }: ConfigFormProps) {
  const [edits, setEdits] = useState<Record<string, FieldEdit>>({})
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

  return (
    <fieldset class='config-form'>
      <legend>Config of <code>{node.id}</code> ({nodeType.type})</legend>
      <p class='muted'>{nodeType.description}</p>
      <p class='muted small'>Fields marked <span aria-hidden='true'>*</span> are required; an empty field is left out and its default (shown greyed) applies.</p>
      {states.map(({ field, text, error }) => {
        const id = `cfg-${field.name}`
        const help = field.description !== undefined || field.templated
        const control = {
          id,
          'aria-describedby': [help ? `${id}-help` : '', error === undefined ? '' : `${id}-error`].filter((part) => part !== '').join(' ') || undefined,
          'aria-invalid': error === undefined ? undefined : true,
          'aria-required': field.required ? true : undefined
        }
        const placeholder = field.default === undefined ? undefined : textOf(field, field.default)
        const label = <>{field.name}{field.required && <span class='required' aria-hidden='true'> *</span>}</>
        const onText = (e: { currentTarget: HTMLInputElement | HTMLTextAreaElement }): void => { edit(field, e.currentTarget.value) }
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
            {field.kind === 'text' && (() => {
              const suggestions = [...field.suggestions, ...(suggestionsFor?.(field.name, field.templated) ?? [])]
              return (
                <>
                  <input {...control} placeholder={placeholder} list={suggestions.length > 0 ? `${id}-options` : undefined} value={text} onInput={onText} />
                  {suggestions.length > 0 && <datalist id={`${id}-options`}>{suggestions.map((option) => <option key={option} value={option} />)}</datalist>}
                </>
              )
            })()}
            {field.kind === 'textarea' && <textarea {...control} placeholder={placeholder} rows={rows(text, 2, 8)} value={text} onInput={onText} />}
            {field.kind === 'code' && <textarea {...control} class='mono code-field' rows={16} spellcheck={false} value={text} onInput={onText} />}
            {field.kind === 'json' && <textarea {...control} placeholder={placeholder} class='mono' rows={rows(text, 3, 12)} spellcheck={false} value={text} onInput={onText} />}
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
