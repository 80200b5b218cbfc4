import { placeholdersIn, templatePreview, type TemplatePreview } from './template-preview.ts'
import type { NewTemplate, TemplateButtonType, TemplateCategory } from './types.ts'

/** A button of a new template as its form holds it: `value` is a URL's address, a number, or a copy code's example. */
export interface TemplateButtonDraft { type: TemplateButtonType, text: string, value: string }

/** A new template as the template editor (pages/templates.tsx) holds it: plain text, one field each. */
export interface TemplateDraft {
  name: string
  language: string
  category: TemplateCategory
  header: string
  body: string
  footer: string
  /** The example of each body variable, `{{1}}` first. */
  examples: string[]
  buttons: TemplateButtonDraft[]
}

const buttonOf = (button: TemplateButtonDraft): NonNullable<NewTemplate['components'][number]['buttons']>[number] => {
  switch (button.type) {
    case 'URL': return { type: 'URL', text: button.text, url: button.value }
    case 'PHONE_NUMBER': return { type: 'PHONE_NUMBER', text: button.text, phone_number: button.value }
    case 'COPY_CODE': return { type: 'COPY_CODE', example: button.value }
    case 'QUICK_REPLY': return { type: 'QUICK_REPLY', text: button.text }
  }
}

/**
 * The draft as the platform's create takes it (`POST /api/chat/templates`): a text header, the body with
 * an example of each variable, the footer and the buttons, each part only when written.
 */
export function draftComponents (draft: TemplateDraft): NewTemplate['components'] {
  const variables = placeholdersIn(draft.body)
  return [
    ...(draft.header.trim() === '' ? [] : [{ type: 'HEADER' as const, format: 'TEXT' as const, text: draft.header }]),
    { type: 'BODY' as const, text: draft.body, ...(variables.length > 0 && { example: { body_text: [variables.map((n) => draft.examples[n - 1] ?? '')] } }) },
    ...(draft.footer.trim() === '' ? [] : [{ type: 'FOOTER' as const, text: draft.footer }]),
    ...(draft.buttons.length === 0 ? [] : [{ type: 'BUTTONS' as const, buttons: draft.buttons.map(buttonOf) }])
  ]
}

/** The draft as its customer will read it, its examples filled in. */
export function draftPreview (draft: TemplateDraft): TemplatePreview {
  const components = draftComponents(draft).map((component) => ({
    type: component.type,
    text: component.text,
    buttons: component.buttons?.map((button) => ({ type: button.type, text: button.type === 'COPY_CODE' ? 'Copy code' : button.text }))
  }))
  return templatePreview({ id: '', name: draft.name, language: draft.language, status: 'PENDING', components }, draft.examples)
}
