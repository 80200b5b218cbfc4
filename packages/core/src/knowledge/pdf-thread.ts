/**
 * The worker-thread script of PDF text extraction (pdf.ts): one PDF per thread. pdfjs-dist runs
 * here whole, its own "worker" included (in Node it loads that into the same thread), so nothing
 * of it runs on the caller's event loop. The thread answers with one PdfThreadMessage; pdf.ts
 * ends it then, or when it takes too long or runs out of heap.
 */
import { fileURLToPath } from 'node:url'
import { parentPort, workerData } from 'node:worker_threads'
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs'
// pdfjs's own worker, run in this thread: it sets globalThis.pdfjsWorker, which getDocument uses.
import 'pdfjs-dist/legacy/build/pdf.worker.mjs'
import { PDF_ERRORS, type PdfLimits, type PdfText } from './pdf.ts'

/** What pdf.ts gives the thread. */
export interface PdfThreadData {
  bytes: Uint8Array
  limits: PdfLimits
}

/** The thread's one answer: the text, or why there is none (a PDF_ERRORS message). */
export type PdfThreadMessage = { ok: true, text: PdfText } | { ok: false, error: string }

/** What is read here of pdfjs's text items (and its marked-content items, which have no text). */
interface TextItem { str: string, transform: number[], height: number, hasEOL: boolean }
type MarkedContent = { type: string }

interface Line { text: string, height: number }

/** A line this much larger than most of the document's text is a heading, if it is short. */
const HEADING_SCALE = 1.2
const HEADING_MAX_CHARS = 120

const { bytes, limits } = workerData as PdfThreadData

/** Set once an allocation was refused: pdfjs may catch the error and go on with less text. */
let bufferRefused = false

/**
 * Makes the thread's ArrayBuffers and typed arrays refuse to allocate more than `maxBytes` at
 * once. Their memory is outside the heap the thread's resource limits bound, and pdfjs decodes a
 * stream into one buffer, doubled as it fills: a few MiB of FlateDecode zeros would grow it to
 * gigabytes. Only this thread's globals change, which pdfjs reads as it allocates; Node's own code
 * keeps the original constructors.
 */
function capBuffers (maxBytes: number): void {
  const names = ['ArrayBuffer', 'Uint8Array', 'Uint8ClampedArray', 'Int8Array', 'Uint16Array', 'Int16Array', 'Uint32Array', 'Int32Array', 'Float32Array', 'Float64Array'] as const
  for (const name of names) {
    const original = globalThis[name]
    const perElement = 'BYTES_PER_ELEMENT' in original ? original.BYTES_PER_ELEMENT : 1
    globalThis[name] = new Proxy(original, {
      construct (target, args: unknown[], newTarget) {
        const [length] = args
        if (typeof length === 'number' && length * perElement > maxBytes) {
          bufferRefused = true
          throw new RangeError(`${name} of ${length} elements refused`)
        }
        return Reflect.construct(target, args, newTarget) as object
      }
    }) as never
  }
}

capBuffers(limits.bufferBytes)
// pdfjs inflates streams with DecompressionStream when there is one, gathering the chunks without
// a bound; without it, it inflates them itself, into a buffer capBuffers bounds.
delete (globalThis as { DecompressionStream?: unknown }).DecompressionStream
/** The character maps of CJK fonts that do not embed theirs, which pdfjs-dist ships. */
const CMAP_PATH = fileURLToPath(new URL('../../cmaps/', import.meta.resolve('pdfjs-dist/legacy/build/pdf.mjs')))

/**
 * A page's lines: its text items joined until one ends a line (`hasEOL`) or the next sits on
 * another baseline (off by more than half the text's height). A line's height is its largest
 * text's; blank lines are left out.
 */
function linesOf (items: Array<TextItem | MarkedContent>): Line[] {
  const lines: Line[] = []
  let text = ''
  let height = 0
  let baseline: number | undefined
  const endLine = (): void => {
    const clean = text.replace(/\s+/g, ' ').trim()
    if (clean !== '') lines.push({ text: clean, height })
    text = ''
    height = 0
    baseline = undefined
  }
  for (const item of items) {
    if (!('str' in item)) continue
    if (item.str !== '') {
      const y = item.transform[5]
      if (baseline !== undefined && Math.abs(y - baseline) > Math.max(height, item.height) / 2) endLine()
      text += item.str
      height = Math.max(height, item.height)
      baseline ??= y
    }
    if (item.hasEOL) endLine()
  }
  endLine()
  return lines
}

/** The height most of the text has: the median of the lines' heights, each line counted by its characters. */
function bodyHeight (lines: Line[]): number {
  const total = lines.reduce((sum, line) => sum + line.text.length, 0)
  let seen = 0
  for (const line of [...lines].sort((a, b) => a.height - b.height)) {
    seen += line.text.length
    if (seen * 2 >= total) return line.height
  }
  return 0
}

/** The message for an error pdfjs threw (or passed on): PDF_ERRORS. */
function failure (error: unknown): string {
  if (bufferRefused) return PDF_ERRORS.streamTooLarge(limits)
  const { name, message } = error as { name?: unknown, message?: unknown }
  if (name === 'PasswordException') return PDF_ERRORS.password
  if (name === 'InvalidPDFException') return PDF_ERRORS.notPdf
  if (String(message).includes('Maximum call stack size exceeded')) return PDF_ERRORS.tooDeep
  return PDF_ERRORS.unreadable(String(message ?? error))
}

async function extract (): Promise<PdfThreadMessage> {
  const document = await getDocument({
    data: bytes,
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    cMapUrl: CMAP_PATH,
    cMapPacked: true,
    verbosity: 0,
    stopAtErrors: false
  }).promise
  if (document.numPages > limits.maxPages) return { ok: false, error: PDF_ERRORS.tooManyPages(document.numPages, limits) }
  const pages: Array<{ number: number, lines: Line[] }> = []
  let textBytes = 0
  for (let number = 1; number <= document.numPages; number++) {
    const page = await document.getPage(number)
    const lines = linesOf((await page.getTextContent()).items)
    // pdfjs goes on past errors in a page's content (stopAtErrors: false), a refused buffer's too.
    if (bufferRefused) return { ok: false, error: PDF_ERRORS.streamTooLarge(limits) }
    for (const line of lines) textBytes += Buffer.byteLength(line.text) + 1
    if (textBytes > limits.maxTextBytes) return { ok: false, error: PDF_ERRORS.tooMuchText(limits) }
    pages.push({ number, lines })
    page.cleanup()
  }
  const body = bodyHeight(pages.flatMap((page) => page.lines))
  const isHeading = (line: Line): boolean =>
    body > 0 && line.height >= body * HEADING_SCALE && line.text.length <= HEADING_MAX_CHARS && /\p{L}/u.test(line.text)
  return { ok: true, text: { pages: pages.map(({ number, lines }) => ({ number, lines: lines.map((line) => ({ text: line.text, heading: isHeading(line) })) })) } }
}

let answer: PdfThreadMessage
try {
  answer = await extract()
} catch (error) {
  answer = { ok: false, error: failure(error) }
}
parentPort?.postMessage(answer)
