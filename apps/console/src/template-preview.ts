import type { Template } from './types.ts'

/** A template as its customer reads it: each part's text with its `{{n}}` filled, the buttons' titles. */
export interface TemplatePreview {
  header?: string
  body: string
  footer?: string
  buttons: string[]
}

const partOf = (template: Template, type: string): { text?: string, buttons?: Array<{ text?: string }> } | undefined =>
  template.components?.find((component) => component.type.toUpperCase() === type)

/** The numbers of the positional placeholders (`{{1}}`, `{{2}}`…) in `text`, each once, in order. */
export const placeholdersIn = (text: string): number[] =>
  [...new Set([...text.matchAll(/\{\{(\d+)\}\}/g)].map((match) => Number(match[1])))].sort((a, b) => a - b)

/** How many positional placeholders the template's body has: one value each to fill. */
export function placeholderCount (template: Template | undefined): number {
  return placeholdersIn(template === undefined ? '' : partOf(template, 'BODY')?.text ?? '').length
}

/**
 * `template` with its body's `{{n}}` replaced by `bodyValues[n - 1]`; a value left empty keeps its
 * `{{n}}`, so that the preview shows what is still to fill rather than a message with a hole.
 */
export function templatePreview (template: Template, bodyValues: string[]): TemplatePreview {
  const fill = (text: string): string => text.replace(/\{\{(\d+)\}\}/g, (placeholder, n: string) => {
    const value = bodyValues[Number(n) - 1]
    return value === undefined || value === '' ? placeholder : value
  })
  const header = partOf(template, 'HEADER')?.text
  const footer = partOf(template, 'FOOTER')?.text
  return {
    ...(header !== undefined && { header }),
    body: fill(partOf(template, 'BODY')?.text ?? ''),
    ...(footer !== undefined && { footer }),
    buttons: (partOf(template, 'BUTTONS')?.buttons ?? []).flatMap((button) => button.text === undefined ? [] : [button.text])
  }
}
