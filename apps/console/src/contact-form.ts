/** A contact's labels and attributes as its form (pages/contacts.tsx) shows them and reads them back. */

/** Labels as typed: separated by commas, each trimmed, empty ones and repeats dropped. */
export const labelsOf = (text: string): string[] => [...new Set(text.split(',').map((label) => label.trim()).filter((label) => label !== ''))]

/** Attributes as typed, one `name = value` a line; a line without `=` names an attribute with an empty value. */
export function attributesOf (text: string): Record<string, string> {
  const attributes: Record<string, string> = {}
  for (const line of text.split('\n')) {
    const at = line.indexOf('=')
    const name = (at < 0 ? line : line.slice(0, at)).trim()
    if (name !== '') attributes[name] = at < 0 ? '' : line.slice(at + 1).trim()
  }
  return attributes
}

export const attributesText = (attributes: Record<string, string>): string => Object.entries(attributes).map(([name, value]) => `${name} = ${value}`).join('\n')
