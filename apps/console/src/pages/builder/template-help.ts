import { renderTemplate } from '@switchboard/core/engine/template'
import { sampleFields } from '../../builder.ts'
import type { TemplateHelp } from '../../components/config-form.tsx'

/** A value rendered against `data`, as one line, with the paths `data` lacks. */
function preview (value: unknown, data: Record<string, unknown>): string {
  const missing: string[] = []
  let rendered: unknown
  try {
    rendered = renderTemplate(value, data, (path) => { missing.push(path) })
  } catch (err) {
    return `cannot render: ${(err as Error).message}`
  }
  const text = typeof rendered === 'string' ? rendered : JSON.stringify(rendered) ?? ''
  const shown = text.length > 200 ? `${text.slice(0, 199)}…` : text
  return missing.length === 0 ? shown : `${shown} (not in the sample: ${missing.join(', ')})`
}

/**
 * The builder's help with a node's templates (its config form's data picker and previews), from
 * `data`: the trigger's data and the outputs of the nodes before it. The previews are core's own
 * renderer, filters included; it is imported here, in the builder's chunk, so that the other pages
 * load none of it (its filters' luxon is a quarter of the builder's size).
 */
export const templateHelp = (data: Record<string, unknown>): TemplateHelp => ({
  fields: sampleFields(data),
  preview: (value) => preview(value, data)
})
