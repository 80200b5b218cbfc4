import { DomainError } from '../errors.ts'
import { renderTemplate } from '../engine/template.ts'

/** A search's words (`?q=`, README, Finding runs): at most 200 characters, all of them matched. */
export const RUN_SEARCH_BOUNDS = { queryChars: 200 } as const

/** A run's tags (README, Finding runs): at most 20, each 1 to 50 characters, no comma and no control character. */
export const RUN_TAG_BOUNDS = { count: 20, chars: 50, template: 1000 } as const

const CONTROL_OR_COMMA = /[\p{Cc},]/u

const isTag = (tag: string): boolean => tag.length > 0 && tag.length <= RUN_TAG_BOUNDS.chars && !CONTROL_OR_COMMA.test(tag)

/** `a, b,a` as tags: trimmed, each once in the order given, empty ones left out. */
const splitTags = (text: string): string[] => [...new Set(text.split(',').map((tag) => tag.trim()).filter((tag) => tag !== ''))]

/** The tags a caller gives (`POST …/fire?tags=a,b`): one beyond the bounds is a 400 naming it. */
export function parseRunTags (text: string): string[] {
  const tags = splitTags(text)
  if (tags.length > RUN_TAG_BOUNDS.count) throw new DomainError('VALIDATION_ERROR', `tags must hold at most ${RUN_TAG_BOUNDS.count} tags`)
  const wrong = tags.find((tag) => !isTag(tag))
  if (wrong !== undefined) throw new DomainError('VALIDATION_ERROR', `tags: each tag must be 1 to ${RUN_TAG_BOUNDS.chars} characters without control characters`)
  return tags
}

/**
 * A run's tags from its workflow's `runTags` template rendered over its trigger's data, comma-separated.
 * A run is never refused for them: a tag beyond the bounds is left out, and so are the tags past the 20th.
 */
export function renderRunTags (template: string, triggerData: unknown): string[] {
  const rendered = renderTemplate(template, { triggerData })
  const text = typeof rendered === 'string' ? rendered : Array.isArray(rendered) ? rendered.join(',') : String(rendered ?? '')
  return splitTags(text).filter(isTag).slice(0, RUN_TAG_BOUNDS.count)
}
