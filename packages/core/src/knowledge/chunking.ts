import type { KnowledgeFaqPair } from '../db/schema/index.ts'

/**
 * Splitting a source into the passages retrieval finds (README, Knowledge: chunks): each keeps the
 * headings it sits under ("Returns › Shoes") and, in a PDF, its page. Pure.
 */

export interface Chunk {
  heading: string
  page: number | null
  content: string
}

/** A passage aims at this many characters, cut at a paragraph, a line, a sentence or a word. */
const CHUNK_TARGET_CHARS = 1000
/**
 * No passage is longer: a paragraph longer than this is cut.
 * @internal exported for its tests
 */
export const CHUNK_MAX_CHARS = 1500
/** The heading path is cut here: a heading is a title, not a passage. */
const HEADING_MAX_CHARS = 300
const HEADING_SEPARATOR = ' › '

/** One line of a document: a heading of some level (1 the highest) or text, on a page. */
export interface DocumentLine {
  text: string
  /** 1–6: a heading of that level; undefined: text. */
  level?: number
  page?: number
}

const MARKDOWN_HEADING = /^(#{1,6})\s+(.+?)\s*#*\s*$/

/** A text or Markdown document as lines: `#` headings are headings (a plain text's are too, if it has them). */
export function markdownLines (text: string): DocumentLine[] {
  return text.split(/\r\n|\r|\n/).map((line): DocumentLine => {
    const heading = MARKDOWN_HEADING.exec(line)
    return heading === null ? { text: line } : { text: heading[2]!, level: heading[1]!.length }
  })
}

/** FAQ pairs as a document: each question a heading, its answer the passage under it. */
export function faqLines (pairs: KnowledgeFaqPair[]): DocumentLine[] {
  return pairs.flatMap((pair) => [{ text: pair.question, level: 1 }, { text: pair.answer }, { text: '' }])
}

/**
 * The passages of a document: a heading starts a section (under the headings of higher levels
 * before it), a page starts one too; a section is cut into passages of about CHUNK_TARGET_CHARS
 * at paragraph breaks, never longer than CHUNK_MAX_CHARS. At most `maxChunks` are made.
 */
export function chunkDocument (lines: DocumentLine[], maxChunks: number): Chunk[] {
  const chunks: Chunk[] = []
  const path: string[] = []
  let paragraphs: string[] = []
  let current: string[] = []
  let page: number | null = null

  const heading = (): string => path.filter((part) => part !== '').join(HEADING_SEPARATOR).slice(0, HEADING_MAX_CHARS)
  const endParagraph = (): void => {
    const paragraph = current.join(' ').replace(/\s+/g, ' ').trim()
    if (paragraph !== '') paragraphs.push(paragraph)
    current = []
  }
  const endSection = (): void => {
    endParagraph()
    for (const content of passages(paragraphs)) {
      if (chunks.length < maxChunks) chunks.push({ heading: heading(), page, content })
    }
    paragraphs = []
  }

  for (const line of lines) {
    if (line.page !== undefined && line.page !== page) {
      endSection()
      page = line.page
    }
    if (line.level !== undefined) {
      endSection()
      path.length = Math.min(path.length, line.level - 1)
      while (path.length < line.level - 1) path.push('')
      path.push(line.text.replace(/\s+/g, ' ').trim())
      continue
    }
    if (line.text.trim() === '') endParagraph()
    else current.push(line.text)
  }
  endSection()
  return chunks
}

/** Paragraphs joined into passages of about CHUNK_TARGET_CHARS; a paragraph longer than CHUNK_MAX_CHARS is cut. */
function passages (paragraphs: string[]): string[] {
  const out: string[] = []
  let passage = ''
  for (const paragraph of paragraphs.flatMap(cutLong)) {
    if (passage !== '' && passage.length + 2 + paragraph.length > CHUNK_TARGET_CHARS) {
      out.push(passage)
      passage = ''
    }
    passage = passage === '' ? paragraph : `${passage}\n\n${paragraph}`
  }
  if (passage !== '') out.push(passage)
  return out
}

/** A paragraph in pieces of at most CHUNK_MAX_CHARS, cut after a sentence, else at a space, else anywhere. */
function cutLong (paragraph: string): string[] {
  const pieces: string[] = []
  let rest = paragraph
  while (rest.length > CHUNK_MAX_CHARS) {
    const window = rest.slice(0, CHUNK_MAX_CHARS)
    const sentence = Math.max(window.lastIndexOf('. '), window.lastIndexOf('! '), window.lastIndexOf('? '))
    const space = window.lastIndexOf(' ')
    const cut = sentence >= CHUNK_TARGET_CHARS / 2 ? sentence + 1 : space >= CHUNK_TARGET_CHARS / 2 ? space : CHUNK_MAX_CHARS
    pieces.push(rest.slice(0, cut).trim())
    rest = rest.slice(cut).trim()
  }
  if (rest !== '') pieces.push(rest)
  return pieces
}
