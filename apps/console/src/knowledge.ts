import type { ChatMessage, KnowledgeCitation } from './types.ts'

/** A passage as the assistant's prompt names it (README, Knowledge): `Returns policy › Shoes (page 3)`; the title alone when it has no heading. */
export function passageLabel (passage: Pick<KnowledgeCitation, 'title' | 'heading' | 'page'>): string {
  const name = passage.heading === '' ? passage.title : `${passage.title} › ${passage.heading}`
  return passage.page === null ? name : `${name} (page ${passage.page})`
}

const isCitation = (value: unknown): value is KnowledgeCitation => {
  if (typeof value !== 'object' || value === null) return false
  const { sourceId, title, heading, page } = value as Record<string, unknown>
  return typeof sourceId === 'string' && typeof title === 'string' && typeof heading === 'string' && (page === null || typeof page === 'number')
}

/**
 * The passages a draft was based on (its `details.sources`), each label once (two passages under the
 * same heading of one source read alike): none when the draft holds none, or nothing readable.
 */
export function draftSources (message: ChatMessage): string[] {
  // The api's schema lets a message's details carry more than it names (additionalProperties): read as unknown, checked here.
  const sources = (message.details as Record<string, unknown> | null | undefined)?.sources
  if (!Array.isArray(sources)) return []
  return [...new Set(sources.filter(isCitation).map(passageLabel))]
}
