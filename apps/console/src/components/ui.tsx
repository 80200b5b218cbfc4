import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { errorText, prettyJson } from '../format.ts'
import type { MessageError, MessageStatus, RunStatus } from '../types.ts'

/** Whether a page was shown already: the first one after a full load leaves focus at the top, where the skip link is. */
let shownBefore = false

/** The page's title; focused when the app moves to another page, so that keyboard and screen reader users start there. */
export function PageTitle ({ children, actions }: { children: ComponentChildren, actions?: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null)
  useEffect(() => {
    if (shownBefore) heading.current?.focus({ preventScroll: true })
    shownBefore = true
  }, [])
  return (
    <div class='page-title'>
      <h1 ref={heading} tabIndex={-1}>{children}</h1>
      {actions !== undefined && <div class='actions'>{actions}</div>}
    </div>
  )
}

export function StatusBadge ({ status }: { status: RunStatus }) {
  return <span class={`badge status-${status.toLowerCase()}`}>{status}</span>
}

export function ErrorNotice ({ error }: { error: Error | undefined }) {
  if (error === undefined) return null
  return <p class='notice error' role='alert'>{error.message}</p>
}

export function Loading ({ what }: { what: string }) {
  return <p class='muted' role='status'>Loading {what}…</p>
}

export function JsonBlock ({ value, label }: { value: unknown, label: string }) {
  return <pre class='json' tabIndex={0} role='group' aria-label={label}>{prettyJson(value)}</pre>
}

const TICKS: Record<MessageStatus, { mark: string, label: string }> = {
  sent: { mark: '✓', label: 'Sent' },
  delivered: { mark: '✓✓', label: 'Delivered' },
  read: { mark: '✓✓', label: 'Read' },
  failed: { mark: '✕', label: 'Failed' }
}

/** An outbound message's status as the platform reported it, as ticks with their name for assistive technology. */
export function StatusTicks ({ status }: { status: MessageStatus | null }) {
  if (status === null) return null
  const tick = TICKS[status]
  return <span class={`ticks ticks-${status}`} title={tick.label}><span aria-hidden='true'>{tick.mark}</span><span class='visually-hidden'>{tick.label}</span></span>
}

/** Why a message failed (`Failed: Message undeliverable (131026)`), its details on hover and when expanded. */
export function FailureReason ({ error, prefix = 'Failed: ' }: { error: MessageError, prefix?: string }) {
  const text = `${prefix}${errorText(error)}`
  if (error.details === null || error.details === '') return <span class='failure-reason small'>{text}</span>
  return (
    <details class='failure-reason small'>
      <summary title={error.details}>{text}</summary>
      <span class='failure-details'>{error.details}</span>
    </details>
  )
}

/** Previous and next pages of a list read with limit and offset. */
export function Pager ({ offset, limit, count, onChange }: { offset: number, limit: number, count: number, onChange: (offset: number) => void }) {
  if (offset === 0 && count < limit) return null
  return (
    <nav class='pager' aria-label='Pages'>
      <button type='button' disabled={offset === 0} onClick={() => { onChange(Math.max(0, offset - limit)) }}>Previous</button>
      <span>{count === 0 ? 'No more' : `${offset + 1}–${offset + count}`}</span>
      <button type='button' disabled={count < limit} onClick={() => { onChange(offset + limit) }}>Next</button>
    </nav>
  )
}

/** A value to copy (an address, an id): selectable text and a Copy button that says when it copied. */
export function CopyField ({ label, value, id }: { label: string, value: string, id: string }) {
  const [copied, setCopied] = useState(false)
  const copy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(value)
    } catch {
      // No clipboard permission (plain http on another host): select the text for Ctrl+C.
      const input = document.getElementById(id) as HTMLInputElement | null
      input?.select()
    }
    setCopied(true)
    setTimeout(() => { setCopied(false) }, 2000)
  }
  return (
    <div class='copy-field'>
      <label for={id}>{label}</label>
      <div class='row'>
        <input id={id} readOnly value={value} class='mono' onFocus={(e) => { e.currentTarget.select() }} />
        <button type='button' onClick={() => { copy() }}>{copied ? 'Copied' : 'Copy'}</button>
      </div>
      <span class='visually-hidden' aria-live='polite'>{copied ? 'Copied to the clipboard' : ''}</span>
    </div>
  )
}
