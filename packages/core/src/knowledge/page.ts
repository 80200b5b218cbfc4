import { Parser } from 'htmlparser2'
import { request, type Dispatcher } from 'undici'
import { blockedHostReason } from '../engine/nodes/http-client.ts'
import { DomainError } from '../errors.ts'
import type { DocumentLine } from './chunking.ts'
import { KNOWLEDGE_LIMITS } from './sources.ts'

/**
 * A URL source's page, fetched once when it is indexed (README, Knowledge: URLs): through the
 * SSRF-guarded dispatcher of http_request, which checks the address of every connection, and each
 * redirect's host checked before it is followed. Bounded in redirects, time and bytes.
 */

const PAGE_LIMITS = {
  maxRedirects: 5,
  /** The whole fetch, redirects included. */
  timeoutMs: 15_000,
  /** A PDF's limit (README, Knowledge); an HTML page's text is checked against the text's after. */
  maxBytes: KNOWLEDGE_LIMITS.pdfMaxBytes
}

export type FetchedPage =
  | { kind: 'html' | 'text', text: string, url: string }
  | { kind: 'pdf', bytes: Uint8Array, url: string }

const REDIRECTS = new Set([301, 302, 303, 307, 308])

const fail = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)

export async function fetchPage (url: string, { dispatcher, allowPrivate }: { dispatcher: Dispatcher, allowPrivate: boolean }): Promise<FetchedPage> {
  const signal = AbortSignal.timeout(PAGE_LIMITS.timeoutMs)
  let target = new URL(url)
  for (let redirects = 0; ; redirects++) {
    if (target.protocol !== 'http:' && target.protocol !== 'https:') throw fail(`The page at ${target.href} is not http or https`)
    const blocked = blockedHostReason(target.hostname, allowPrivate)
    if (blocked !== undefined) throw fail(blocked)
    let answer: Dispatcher.ResponseData
    try {
      answer = await request(target, { dispatcher, signal, headers: { accept: 'text/html, text/plain, text/markdown, application/pdf', 'user-agent': 'Switchboard knowledge' } })
    } catch (err) {
      throw fail(`The page could not be fetched: ${err instanceof Error ? err.message : String(err)}`.slice(0, 500))
    }
    const location = answer.headers.location
    if (REDIRECTS.has(answer.statusCode) && typeof location === 'string') {
      discard(answer.body)
      if (redirects === PAGE_LIMITS.maxRedirects) throw fail(`The page redirected more than ${PAGE_LIMITS.maxRedirects} times`)
      target = new URL(location, target)
      continue
    }
    if (answer.statusCode < 200 || answer.statusCode >= 300) {
      discard(answer.body)
      throw fail(`The page answered ${answer.statusCode}`)
    }
    const type = String(answer.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
    const kind = type === 'application/pdf' ? 'pdf' : type === 'text/html' || type === 'application/xhtml+xml' ? 'html' : type.startsWith('text/') ? 'text' : undefined
    if (kind === undefined) {
      discard(answer.body)
      throw fail(`The page is ${type === '' ? 'of no declared type' : type}: a URL source is an HTML, text or PDF page`)
    }
    const bytes = await readBounded(answer.body)
    return kind === 'pdf' ? { kind, bytes, url: target.href } : { kind, text: new TextDecoder().decode(bytes), url: target.href }
  }
}

/** Stops reading a body: undici reports the abort as an error, which nobody waits for here. */
function discard (body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {})
  body.destroy()
}

async function readBounded (body: Dispatcher.ResponseData['body']): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.byteLength
    if (size > PAGE_LIMITS.maxBytes) {
      discard(body)
      throw fail(`The page is larger than ${PAGE_LIMITS.maxBytes / 1024 / 1024} MiB`)
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

const SKIPPED = new Set(['script', 'style', 'noscript', 'template', 'svg', 'nav', 'footer', 'head', 'iframe', 'form', 'button'])
const BLOCKS = new Set(['p', 'div', 'section', 'article', 'main', 'li', 'tr', 'br', 'hr', 'table', 'ul', 'ol', 'dl', 'dt', 'dd', 'blockquote', 'pre', 'header', 'aside', 'figcaption'])

/** An HTML page as lines: `h1`–`h6` are headings, block elements end lines, scripts, styles and navigation are left out; `title` is the page's. */
export function htmlLines (html: string): { title: string, lines: DocumentLine[] } {
  const lines: DocumentLine[] = []
  let text = ''
  let level: number | undefined
  let skipping = 0
  let inTitle = false
  let title = ''
  const endLine = (): void => {
    const line = text.replace(/\s+/g, ' ').trim()
    if (line !== '') lines.push(level === undefined ? { text: line } : { text: line, level })
    else if (level === undefined) lines.push({ text: '' })
    text = ''
  }
  const parser = new Parser({
    onopentag (name) {
      if (SKIPPED.has(name)) skipping++
      if (name === 'title') inTitle = true
      const heading = /^h([1-6])$/.exec(name)
      if (heading !== null) { endLine(); level = Number(heading[1]) } else if (BLOCKS.has(name)) endLine()
    },
    ontext (data) {
      if (inTitle) title += data
      else if (skipping === 0) text += data
    },
    onclosetag (name) {
      if (SKIPPED.has(name)) skipping = Math.max(0, skipping - 1)
      if (name === 'title') inTitle = false
      if (/^h[1-6]$/.test(name)) { endLine(); level = undefined } else if (BLOCKS.has(name)) endLine()
    }
  }, { decodeEntities: true })
  parser.write(html)
  parser.end()
  endLine()
  return { title: title.replace(/\s+/g, ' ').trim(), lines }
}
