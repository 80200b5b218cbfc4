/**
 * The text of an uploaded PDF, for the knowledge base: read by pdfjs-dist in a worker thread of
 * its own (pdf-thread.ts), started for each PDF, so that a hostile or merely huge file costs the
 * caller's event loop nothing and can be stopped. The thread's JavaScript heap is bounded by the
 * thread's resource limits; what the heap limits miss (buffers: a compressed stream inflating to
 * gigabytes) the thread bounds itself; time is bounded here, by ending the thread.
 */
import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { DomainError } from '../errors.ts'
import type { PdfThreadData, PdfThreadMessage } from './pdf-thread.ts'

export interface PdfText {
  /** Every page, in order, numbered from 1; a page without text has no lines. */
  pages: Array<{ number: number, lines: Array<{ text: string, heading: boolean }> }>
}

export interface PdfLimits {
  /** The largest PDF read, in bytes: a larger one is refused before a thread starts. */
  maxBytes: number
  /** The most pages: a PDF with more is refused whole, before any page is read. */
  maxPages: number
  /** The most text extracted, in UTF-8 bytes: the extraction stops past it. */
  maxTextBytes: number
  /** How long one extraction may take, the thread's start included: the thread is ended past it. */
  timeMs: number
  /** The thread's old-generation heap, in MiB: a thread that needs more ends (resourceLimits). */
  heapMb: number
  /** The thread's young-generation heap, in MiB. */
  youngHeapMb: number
  /**
   * The largest buffer the thread may allocate at once, in bytes: buffers live outside the heap
   * the thread's resource limits bound, and a stream's decoded bytes are one buffer.
   */
  bufferBytes: number
}

const MiB = 1024 * 1024

/** A PDF's bounds (README, Knowledge); its size and text are every source's (knowledge/sources.ts, KNOWLEDGE_LIMITS). */
export const DEFAULT_PDF_LIMITS: Readonly<PdfLimits> = Object.freeze({
  maxBytes: 20 * MiB,
  maxPages: 500,
  maxTextBytes: 5 * MiB,
  timeMs: 60_000,
  heapMb: 256,
  youngHeapMb: 32,
  // Over three times the largest PDF: a real PDF's content streams and fonts inflate to far less.
  bufferBytes: 64 * MiB
})

const size = (bytes: number): string => bytes >= MiB ? `${Math.round(bytes / MiB * 10) / 10} MiB` : `${bytes} bytes`

/** The messages of the PDFs refused, word for word: the source's error the user sees. */
export const PDF_ERRORS = {
  empty: 'The PDF is empty',
  tooLarge: (limits: PdfLimits) => `The PDF is larger than ${size(limits.maxBytes)}`,
  notPdf: 'The file is not a PDF, or is damaged beyond reading',
  password: 'The PDF is protected by a password: upload a copy without one',
  tooManyPages: (pages: number, limits: PdfLimits) => `The PDF has ${pages} pages, at most ${limits.maxPages}`,
  tooDeep: 'The PDF cannot be read: its objects are nested too deeply',
  tooMuchText: (limits: PdfLimits) => `The PDF has more than ${size(limits.maxTextBytes)} of text`,
  tooLong: (limits: PdfLimits) => `The PDF took too long to extract (more than ${limits.timeMs / 1000} s)`,
  tooMuchMemory: (limits: PdfLimits) => `The PDF needs too much memory to extract (more than ${limits.heapMb} MiB)`,
  streamTooLarge: (limits: PdfLimits) => `The PDF needs too much memory to extract: a stream in it decodes to more than ${size(limits.bufferBytes)}`,
  unreadable: (why: string) => `The PDF cannot be read: ${why.slice(0, 200)}`
}

const EXTENSION = extname(fileURLToPath(import.meta.url))
/** pdf-thread.js next to pdf.js in the build (dist/, and the deployed bundles), pdf-thread.ts next to pdf.ts from source. */
const THREAD_URL = new URL(`./pdf-thread${EXTENSION}`, import.meta.url)

function startThread (bytes: Uint8Array, limits: PdfLimits): Worker {
  // A copy of the bytes is handed over, not cloned: a clone of a view (a Buffer) copies its whole
  // underlying buffer, and the caller's bytes stay the caller's.
  const copy = new Uint8Array(bytes)
  const workerData: PdfThreadData = { bytes: copy, limits }
  const options = { workerData, transferList: [copy.buffer], resourceLimits: { maxOldGenerationSizeMb: limits.heapMb, maxYoungGenerationSizeMb: limits.youngHeapMb } }
  if (EXTENSION !== '.ts') return new Worker(THREAD_URL, options)
  // From source, with tsx, as the code sandbox's pool starts its thread (engine/sandbox/pool.ts):
  // on Node 20 tsx registers its loader on the main thread only. pdfjs-dist is loaded before, as
  // is: through tsx, its 4 MB took 3 s to load instead of 0.2 s.
  const pdfjs = ['pdfjs-dist/legacy/build/pdf.mjs', 'pdfjs-dist/legacy/build/pdf.worker.mjs'].map((specifier) => import.meta.resolve(specifier))
  const bootstrap = `Promise.all(${JSON.stringify(pdfjs)}.map((url) => import(url)))
    .then(() => import('tsx/esm/api'))
    .then(({ register }) => { register(); return import(${JSON.stringify(THREAD_URL.href)}) })`
  return new Worker(bootstrap, { ...options, eval: true })
}

/**
 * The text of the PDF in `bytes`, line by line, page by page; a line is a heading when its text
 * is clearly larger than most of the document's. Throws DomainError VALIDATION_ERROR (PDF_ERRORS)
 * for a PDF that is empty, not a PDF, protected by a password, beyond `limits`, or unreadable.
 */
export async function extractPdf (bytes: Uint8Array, limits: PdfLimits = DEFAULT_PDF_LIMITS): Promise<PdfText> {
  if (bytes.byteLength === 0) throw new DomainError('VALIDATION_ERROR', PDF_ERRORS.empty)
  if (bytes.byteLength > limits.maxBytes) throw new DomainError('VALIDATION_ERROR', PDF_ERRORS.tooLarge(limits))
  return await new Promise<PdfText>((resolve, reject) => {
    const worker = startThread(bytes, limits)
    let settled = false
    const settle = (outcome: PdfThreadMessage): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      // The thread is done with, whatever it was doing: ending it frees its memory at once.
      worker.terminate().catch(() => {})
      if (outcome.ok) resolve(outcome.text)
      else reject(new DomainError('VALIDATION_ERROR', outcome.error))
    }
    const timer = setTimeout(() => { settle({ ok: false, error: PDF_ERRORS.tooLong(limits) }) }, limits.timeMs)
    worker.on('message', settle)
    worker.on('error', (error: Error & { code?: string }) => {
      settle({ ok: false, error: error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? PDF_ERRORS.tooMuchMemory(limits) : PDF_ERRORS.unreadable(error.message) })
    })
    worker.on('exit', (code) => { settle({ ok: false, error: PDF_ERRORS.unreadable(`the extraction ended with code ${code}`) }) })
  })
}
