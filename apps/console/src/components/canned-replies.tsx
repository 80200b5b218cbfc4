import { useState } from 'preact/hooks'
import { api } from '../api.ts'
import { useAction } from '../hooks.ts'
import type { CannedReply, CannedReplyInput } from '../types.ts'
import { ErrorNotice } from './ui.tsx'

/** Suggestions shown at once: the reply box stays in view. */
const SUGGESTIONS_SHOWN = 8
/** The api's bounds (README, The team inbox). */
const BOUNDS = { shortcut: 32, title: 100, text: 4096 }
const SHORTCUT = '[a-z0-9_\\-]{1,32}'

/**
 * The canned replies a reply box's text asks for: `/` then the start of a shortcut, or a word of a
 * title; none once the text holds anything else (a space, a second line).
 */
function matchesOf (replies: CannedReply[], text: string): CannedReply[] {
  if (!/^\/\S*$/.test(text)) return []
  const typed = text.slice(1).toLowerCase()
  return replies
    .filter((reply) => reply.shortcut.startsWith(typed) || reply.title.toLowerCase().split(/\s+/).some((word) => word.startsWith(typed)))
    .slice(0, SUGGESTIONS_SHOWN)
}

interface ReplyTextProps {
  id: string
  value: string
  onInput: (text: string) => void
  /** Ctrl+Enter (⌘+Enter). */
  onSend: () => void
  replies: CannedReply[]
}

/**
 * A reply box where `/` at the start offers the account's canned replies: ↑ and ↓ choose, Enter or
 * Tab (or a click) puts the reply's text in the box, Escape leaves what is typed.
 */
export function ReplyText ({ id, value, onInput, onSend, replies }: ReplyTextProps) {
  const [active, setActive] = useState(0)
  const [dismissed, setDismissed] = useState<string | null>(null)
  const matches = dismissed === value ? [] : matchesOf(replies, value)
  const current = Math.min(active, matches.length - 1)
  const listId = `${id}-canned`
  const insert = (reply: CannedReply): void => {
    onInput(reply.text)
    setActive(0)
  }
  const onKeyDown = (e: KeyboardEvent): void => {
    if (matches.length > 0) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault()
        setActive((current + (e.key === 'ArrowDown' ? 1 : matches.length - 1)) % matches.length)
        return
      }
      if ((e.key === 'Enter' && !e.ctrlKey && !e.metaKey) || e.key === 'Tab') {
        e.preventDefault()
        insert(matches[current]!)
        return
      }
      if (e.key === 'Escape') {
        setDismissed(value)
        return
      }
    }
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && value.trim() !== '') onSend()
  }
  return (
    <div class='reply-text'>
      <textarea
        id={id} rows={3} maxLength={BOUNDS.text} required value={value}
        aria-autocomplete='list' aria-controls={matches.length > 0 ? listId : undefined}
        aria-activedescendant={matches.length > 0 ? `${listId}-${matches[current]!.id}` : undefined}
        onInput={(e) => { onInput(e.currentTarget.value); setActive(0) }}
        onKeyDown={onKeyDown}
      />
      {matches.length > 0 && (
        <ul class='canned-suggestions' id={listId} role='listbox' aria-label='Canned replies'>
          {matches.map((reply, n) => (
            // The textarea keeps the focus (a click does not take it): the keyboard moves through the options from there.
            <li
              key={reply.id} id={`${listId}-${reply.id}`} role='option' aria-selected={n === current}
              onMouseDown={(e) => { e.preventDefault() }} onClick={() => { insert(reply) }}
            >
              <code>/{reply.shortcut}</code> <span>{reply.title}</span>
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}

const EMPTY: CannedReplyInput = { shortcut: '', title: '', text: '' }

/** The account's canned replies: added, changed and deleted here, shared by everyone who uses the account. */
export function CannedReplies ({ accountId, replies, onChanged }: { accountId: string, replies: CannedReply[] | undefined, onChanged: () => void }) {
  const [form, setForm] = useState<CannedReplyInput>(EMPTY)
  const [editing, setEditing] = useState<string | undefined>(undefined)
  const save = useAction(async () => {
    await api.saveCannedReply(accountId, form, editing)
    setForm(EMPTY)
    setEditing(undefined)
    onChanged()
  })
  const remove = useAction(async (reply: CannedReply) => {
    await api.deleteCannedReply(accountId, reply.id)
    if (editing === reply.id) {
      setForm(EMPTY)
      setEditing(undefined)
    }
    onChanged()
  })
  const field = (name: keyof CannedReplyInput) => ({
    value: form[name],
    onInput: (e: { currentTarget: { value: string } }) => { setForm({ ...form, [name]: e.currentTarget.value }) }
  })
  return (
    <details class='canned-replies'>
      <summary>Canned replies{replies === undefined ? '' : ` (${replies.length})`}</summary>
      <p class='muted small'>Type <kbd>/</kbd> at the start of a reply to insert one.</p>
      <ErrorNotice error={remove.error} />
      {replies !== undefined && replies.length > 0 && (
        <ul class='canned-list'>
          {replies.map((reply) => (
            <li key={reply.id} data-shortcut={reply.shortcut}>
              <div><code>/{reply.shortcut}</code> <strong>{reply.title}</strong></div>
              <div class='muted small canned-text'>{reply.text}</div>
              <div class='row'>
                <button type='button' class='link-button' onClick={() => { setEditing(reply.id); setForm({ shortcut: reply.shortcut, title: reply.title, text: reply.text }) }}>Edit</button>
                <button type='button' class='link-button' disabled={remove.busy} onClick={() => { remove.run(reply) }}>Delete</button>
              </div>
            </li>
          ))}
        </ul>
      )}
      <form class='canned-form' aria-label={editing === undefined ? 'New canned reply' : 'Edit the canned reply'} onSubmit={(event) => { event.preventDefault(); save.run() }}>
        <label for='canned-shortcut'>Shortcut <span class='muted small'>(a–z, 0–9, _ and -)</span></label>
        <input id='canned-shortcut' required maxLength={BOUNDS.shortcut} pattern={SHORTCUT} {...field('shortcut')} />
        <label for='canned-title'>Title</label>
        <input id='canned-title' required maxLength={BOUNDS.title} {...field('title')} />
        <label for='canned-text'>Text</label>
        <textarea id='canned-text' rows={3} required maxLength={BOUNDS.text} {...field('text')} />
        <ErrorNotice error={save.error} />
        <div class='row'>
          <button type='submit' class='primary' disabled={save.busy}>{editing === undefined ? 'Add' : 'Save'}</button>
          {editing !== undefined && <button type='button' onClick={() => { setEditing(undefined); setForm(EMPTY) }}>Cancel</button>}
        </div>
      </form>
    </details>
  )
}
