import { useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { TEMPLATE_CATEGORIES } from '@switchboard/core/db/values'
import { api } from '../api.ts'
import { AccountSwitcher } from '../components/account-switcher.tsx'
import { TemplateText } from '../components/template-text.tsx'
import { ErrorNotice, Loading, PageTitle } from '../components/ui.tsx'
import { dateTime } from '../format.ts'
import { useAction, useAddressFilters, useChatAccount, useData } from '../hooks.ts'
import { paths } from '../paths.ts'
import { chooseAccount } from '../session.ts'
import { draftComponents, draftPreview, type TemplateButtonDraft, type TemplateDraft } from '../template-draft.ts'
import { placeholdersIn } from '../template-preview.ts'
import type { StoredTemplate, TemplateButtonType, TemplateCategory } from '../types.ts'

const STATUS_BADGES: Record<StoredTemplate['status'], string> = {
  PENDING: 'status-pending',
  APPROVED: 'status-success',
  REJECTED: 'status-failed',
  PAUSED: 'status-waiting',
  DISABLED: 'status-cancelled'
}

const BUTTON_KINDS: Record<TemplateButtonType, string> = {
  QUICK_REPLY: 'Quick reply',
  URL: 'Visit a website',
  PHONE_NUMBER: 'Call a number',
  COPY_CODE: 'Copy a code'
}

/** A template is read again this often while one is under review and the page is visible. */
const REVIEW_MS = 5000

function TemplateRow ({ accountId, template, onChanged }: { accountId: string, template: StoredTemplate, onChanged: () => void }) {
  const remove = useAction(async () => {
    await api.deleteTemplate(accountId, template.name)
    onChanged()
  })
  return (
    <tr data-template={`${template.name}|${template.language}`}>
      <th scope='row' class='mono'>{template.name}</th>
      <td>{template.language}</td>
      <td>{template.category}</td>
      <td>
        <span class={`badge ${STATUS_BADGES[template.status]}`} data-template-status={template.status}>{template.status}</span>
        {template.reason !== null && <div class='small'>{template.reason}</div>}
      </td>
      <td>{template.quality ?? '—'}</td>
      <td>{dateTime(template.updatedAt)}</td>
      <td>
        <button type='button' class='danger' disabled={remove.busy} aria-label={`Delete ${template.name}`} onClick={() => { if (confirm(`Delete the template ${template.name}, in every language?`)) remove.run() }}>Delete</button>
        <ErrorNotice error={remove.error} />
      </td>
    </tr>
  )
}

const EMPTY_DRAFT: TemplateDraft = { name: '', language: 'en_US', category: 'UTILITY', header: '', body: '', footer: '', examples: [], buttons: [] }

/** The form of a new template, beside the message it makes as the customer will read it (its examples filled). */
function TemplateEditor ({ accountId, onCreated }: { accountId: string, onCreated: () => void }) {
  const [draft, setDraft] = useState<TemplateDraft>(EMPTY_DRAFT)
  const set = (change: Partial<TemplateDraft>): void => { setDraft({ ...draft, ...change }) }
  const setButton = (index: number, change: Partial<TemplateButtonDraft>): void => { set({ buttons: draft.buttons.map((button, i) => i === index ? { ...button, ...change } : button) }) }
  const variables = placeholdersIn(draft.body)
  const create = useAction(async () => {
    await api.createTemplate(accountId, { name: draft.name.trim(), language: draft.language.trim(), category: draft.category, components: draftComponents(draft) })
    setDraft(EMPTY_DRAFT)
    onCreated()
  })
  return (
    <section class='card' aria-labelledby='new-template-title'>
      <h2 id='new-template-title'>New template</h2>
      <div class='template-editor'>
        <form onSubmit={(event) => { event.preventDefault(); create.run() }}>
          <div class='form-pair'>
            <div>
              <label for='template-name'>Name (lowercase letters, digits, _)</label>
              <input id='template-name' required pattern='[a-z0-9_]+' maxLength={512} placeholder='e.g. order_shipped' value={draft.name} onInput={(e) => { set({ name: e.currentTarget.value }) }} />
            </div>
            <div>
              <label for='template-language'>Language</label>
              <input id='template-language' required maxLength={15} placeholder='e.g. en_US' value={draft.language} onInput={(e) => { set({ language: e.currentTarget.value }) }} />
            </div>
          </div>
          <label for='template-category'>Category</label>
          <select id='template-category' value={draft.category} onChange={(e) => { set({ category: e.currentTarget.value as TemplateCategory }) }}>
            {TEMPLATE_CATEGORIES.map((category) => <option key={category} value={category}>{category}</option>)}
          </select>
          <label for='template-header'>Header (optional, up to 60 characters)</label>
          <input id='template-header' maxLength={60} value={draft.header} onInput={(e) => { set({ header: e.currentTarget.value }) }} />
          <label for='template-body'>Body (up to 1024 characters; {'{{1}}'}, {'{{2}}'}… for what each message fills in)</label>
          <textarea id='template-body' required rows={5} maxLength={1024} placeholder='e.g. Hi {{1}}, your order {{2}} has shipped.' value={draft.body} onInput={(e) => { set({ body: e.currentTarget.value }) }} />
          {variables.map((n) => (
            <div key={n}>
              <label for={`template-example-${n}`}>{`Example of {{${n}}}`} <span class='muted'>(the platform's reviewers read it)</span></label>
              <input id={`template-example-${n}`} required maxLength={200} value={draft.examples[n - 1] ?? ''} onInput={(e) => { const examples = [...draft.examples]; examples[n - 1] = e.currentTarget.value; set({ examples }) }} />
            </div>
          ))}
          <label for='template-footer'>Footer (optional, up to 60 characters)</label>
          <input id='template-footer' maxLength={60} value={draft.footer} onInput={(e) => { set({ footer: e.currentTarget.value }) }} />
          <fieldset>
            <legend>Buttons</legend>
            {draft.buttons.map((button, index) => (
              <div class='row' key={index}>
                <select aria-label={`Kind of button ${index + 1}`} value={button.type} onChange={(e) => { setButton(index, { type: e.currentTarget.value as TemplateButtonType }) }}>
                  {(Object.keys(BUTTON_KINDS) as TemplateButtonType[]).map((kind) => <option key={kind} value={kind}>{BUTTON_KINDS[kind]}</option>)}
                </select>
                {button.type !== 'COPY_CODE' && <input aria-label={`Text of button ${index + 1}`} required maxLength={25} placeholder='Button text' value={button.text} onInput={(e) => { setButton(index, { text: e.currentTarget.value }) }} />}
                {button.type === 'URL' && <input aria-label={`Address of button ${index + 1}`} required maxLength={2000} placeholder='https://shop.example/track' value={button.value} onInput={(e) => { setButton(index, { value: e.currentTarget.value }) }} />}
                {button.type === 'PHONE_NUMBER' && <input aria-label={`Number of button ${index + 1}`} required maxLength={20} placeholder='+15551234567' value={button.value} onInput={(e) => { setButton(index, { value: e.currentTarget.value }) }} />}
                {button.type === 'COPY_CODE' && <input aria-label={`Example code of button ${index + 1}`} required maxLength={15} placeholder='e.g. SAVE10' value={button.value} onInput={(e) => { setButton(index, { value: e.currentTarget.value }) }} />}
                <button type='button' aria-label={`Remove button ${index + 1}`} onClick={() => { set({ buttons: draft.buttons.filter((_button, i) => i !== index) }) }}>Remove</button>
              </div>
            ))}
            {draft.buttons.length < 10 && <button type='button' onClick={() => { set({ buttons: [...draft.buttons, { type: 'QUICK_REPLY', text: '', value: '' }] }) }}>Add a button</button>}
          </fieldset>
          <ErrorNotice error={create.error} />
          <button type='submit' class='primary' disabled={create.busy}>{create.busy ? 'Submitting…' : 'Submit for review'}</button>
        </form>
        <div class='template-preview-pane'>
          <h3>As the customer reads it</h3>
          <div class='template-preview' aria-label='The new template as the customer reads it'><TemplateText preview={draftPreview(draft)} /></div>
          <p class='small muted'>With the examples filled in. The platform reviews a template before it can be sent; its status shows in the list.</p>
        </div>
      </div>
    </section>
  )
}

/**
 * Templates made here (README, Chat: templates): each with the platform's review (status, reason,
 * quality), deleted here, and a new one written beside its preview and submitted for review. The list
 * is read again while one is under review.
 */
export function Templates () {
  const { query } = useLocation()
  const { accounts, choices, accountId } = useChatAccount(query.account)
  const [reviewing, setReviewing] = useState(false)
  const templates = useData(async () => {
    if (accountId === undefined) return undefined
    const stored = await api.storedTemplates(accountId)
    setReviewing(stored.some((template) => template.status === 'PENDING'))
    return stored
  }, [accountId], reviewing ? REVIEW_MS : null)
  const setFilter = useAddressFilters(paths.templates)
  return (
    <section>
      <PageTitle actions={<AccountSwitcher choices={choices} value={accountId ?? ''} onChange={(id) => { chooseAccount(id); setFilter('account', id) }} />}>Templates</PageTitle>
      <ErrorNotice error={accounts.error ?? templates.error} />
      <section class='card' aria-labelledby='templates-title'>
        <h2 id='templates-title'>Made here</h2>
        {templates.data === undefined
          ? <Loading what='templates' />
          : templates.data.length === 0
            ? <p id='no-templates'>No template made here yet. Approved templates made elsewhere are offered in broadcasts and replies all the same.</p>
            : (
              <div class='table-wrap'>
                <table id='templates'>
                  <thead><tr><th scope='col'>Name</th><th scope='col'>Language</th><th scope='col'>Category</th><th scope='col'>Status</th><th scope='col'>Quality</th><th scope='col'>Changed</th><th scope='col'><span class='visually-hidden'>Actions</span></th></tr></thead>
                  <tbody>{templates.data.map((template) => <TemplateRow key={`${template.name}|${template.language}`} accountId={accountId!} template={template} onChanged={() => { templates.reload() }} />)}</tbody>
                </table>
              </div>
              )}
      </section>
      {accountId !== undefined && <TemplateEditor accountId={accountId} onCreated={() => { templates.reload() }} />}
    </section>
  )
}
