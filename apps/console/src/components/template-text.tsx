import type { TemplatePreview } from '../template-preview.ts'

/** A template message's parts as the customer reads them: its header, body, footer and buttons. */
export function TemplateText ({ preview }: { preview: TemplatePreview }) {
  return (
    <span class='template-text'>
      {preview.header !== undefined && <strong class='template-header'>{preview.header}</strong>}
      <span class='template-body'>{preview.body}</span>
      {preview.footer !== undefined && <span class='small muted template-footer'>{preview.footer}</span>}
      {preview.buttons.length > 0 && <span class='row'>{preview.buttons.map((button) => <span key={button} class='tag'>{button}</span>)}</span>}
    </span>
  )
}
