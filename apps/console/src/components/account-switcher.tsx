import type { AccountChoice } from '../chat-accounts.ts'

/** The chat account a page reads and acts for, when the user has more than one to choose from. */
export function AccountSwitcher ({ choices, value, onChange }: { choices: AccountChoice[], value: string, onChange: (id: string) => void }) {
  if (choices.length < 2) return null
  return (
    <label class='account-switcher'>Chat account
      <select value={value} onChange={(e) => { onChange(e.currentTarget.value) }}>
        {choices.map((choice) => <option key={choice.id} value={choice.id}>{choice.label}</option>)}
      </select>
    </label>
  )
}
