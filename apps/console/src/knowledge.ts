import type { ChatMessage, KnowledgeCitation } from './types.ts'

/** A passage as the assistant's prompt names it (README, Knowledge): `Returns policy › Shoes (page 3)`; the title alone when it has no heading. */
export function passageLabel (passage: Pick<KnowledgeCitation, 'title' | 'heading' | 'page'>): string {
  const name = passage.heading === '' ? passage.title : `${passage.title} › ${passage.heading}`
  return passage.page === null ? name : `${name} (page ${passage.page})`
}

/** The passages a draft was based on (its `details.sources`), each label once: two passages under the same heading of one source read alike. */
export function draftSources (message: ChatMessage): string[] {
  return [...new Set((message.details?.sources ?? []).map(passageLabel))]
}
