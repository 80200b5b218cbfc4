import { performance } from 'node:perf_hooks'
import t, { type Test } from 'tap'
import { deeplyNestedPdf, flateBombPdf, hugeLengthPdf, japanesePdf, makePdf, manyPagesPdf, passwordPdf } from '@switchboard/testing/pdf'
import { DomainError } from '../src/errors.ts'
import { DEFAULT_PDF_LIMITS, extractPdf, PDF_ERRORS, type PdfText } from '../src/knowledge/pdf.ts'

const MiB = 1024 * 1024

interface Watched {
  outcome: { text: PdfText } | { error: unknown }
  ms: number
  /** The longest the caller's event loop was late for a 10 ms interval. */
  worstDelayMs: number
  /** How much the process's memory (every thread's) and the caller's own heap grew at their peak. */
  rssGrowth: number
  heapGrowth: number
}

/**
 * Extracts while watching the caller: its event loop (a 10 ms interval, which the machine's
 * other processes can stretch) and the process's memory, sampled on each tick.
 */
async function watched (bytes: Uint8Array, limits = DEFAULT_PDF_LIMITS): Promise<Watched> {
  const rss = process.memoryUsage.rss()
  const heap = process.memoryUsage().heapUsed
  let peakRss = rss
  let peakHeap = heap
  let last = performance.now()
  let worstDelayMs = 0
  const timer = setInterval(() => {
    const now = performance.now()
    worstDelayMs = Math.max(worstDelayMs, now - last - 10)
    last = now
    const memory = process.memoryUsage()
    peakRss = Math.max(peakRss, memory.rss)
    peakHeap = Math.max(peakHeap, memory.heapUsed)
  }, 10)
  const started = performance.now()
  let outcome: Watched['outcome']
  try {
    outcome = { text: await extractPdf(bytes, limits) }
  } catch (error) {
    outcome = { error }
  }
  const ms = performance.now() - started
  clearInterval(timer)
  return { outcome, ms, worstDelayMs, rssGrowth: peakRss - rss, heapGrowth: peakHeap - heap }
}

/** The outcome is the VALIDATION_ERROR `message`. */
function refused (t: Test, { outcome }: Watched, message: string): void {
  if ('text' in outcome) {
    t.fail(`extracted instead of refusing with "${message}"`)
    return
  }
  const { error } = outcome
  if (!(error instanceof DomainError)) {
    t.fail(`threw ${String(error)} instead of a DomainError`)
    return
  }
  t.same({ code: error.code, message: error.message }, { code: 'VALIDATION_ERROR', message })
}

/** The caller stayed responsive and its memory bounded; the extraction ended within `maxMs`. */
function bounded (t: Test, watch: Watched, maxMs: number): void {
  t.ok(watch.ms < maxMs, `ended after ${Math.round(watch.ms)} ms (at most ${maxMs})`)
  t.ok(watch.worstDelayMs < 500, `the event loop was at most ${Math.round(watch.worstDelayMs)} ms late`)
  t.ok(watch.heapGrowth < 64 * MiB, `the caller's heap grew by ${Math.round(watch.heapGrowth / MiB)} MiB`)
  t.ok(watch.rssGrowth < 400 * MiB, `the process grew by ${Math.round(watch.rssGrowth / MiB)} MiB`)
}

const line = (text: string, heading = false): { text: string, heading: boolean } => ({ text, heading })

t.test('the lines of each page, numbered, with the larger short ones as headings', async (t) => {
  const pdf = makePdf([
    [{ text: 'Returns policy', size: 20 }, 'Shoes can be returned within 30 days.', 'Keep the receipt (and the box) \\ the tags.'],
    ['Opening hours are 9 to 5.', { text: 'Shipping', size: 16 }, 'We ship to 40 countries.', { text: '2024', size: 20 }],
    ['Page three.']
  ])
  const watch = await watched(pdf)
  t.same(watch.outcome, {
    text: {
      pages: [
        { number: 1, lines: [line('Returns policy', true), line('Shoes can be returned within 30 days.'), line('Keep the receipt (and the box) \\ the tags.')] },
        // Large but without a letter: a number, not a heading.
        { number: 2, lines: [line('Opening hours are 9 to 5.'), line('Shipping', true), line('We ship to 40 countries.'), line('2024')] },
        { number: 3, lines: [line('Page three.')] }
      ]
    }
  })
  bounded(t, watch, 10_000)
  t.same(await extractPdf(makePdf([['All the same size.'], ['So no headings.']])), { pages: [{ number: 1, lines: [line('All the same size.')] }, { number: 2, lines: [line('So no headings.')] }] })
  // Small sizes, so that 121 characters fit on the page's width.
  const long = 'A large line that goes on and on, longer than a heading would be, '.repeat(2).slice(0, 121)
  const body = { text: 'Most of the text is in this size, on this line and the next two.', size: 6 }
  t.same(await extractPdf(makePdf([[{ text: 'Large and short', size: 8 }, { text: long, size: 8 }, body, body, body]])), {
    pages: [{ number: 1, lines: [line('Large and short', true), line(long), line(body.text), line(body.text), line(body.text)] }]
  }, 'a large line of more than 120 characters is not a heading')
})

t.test('Japanese text in a font without its own character map is read through the maps pdfjs-dist ships', async (t) => {
  t.same(await extractPdf(japanesePdf(['返品について', '30日以内'])), { pages: [{ number: 1, lines: [line('返品について'), line('30日以内')] }] })
})

t.test('an empty file, a file that is not a PDF, a PDF over the size limit and one with a password are refused', async (t) => {
  refused(t, await watched(new Uint8Array()), PDF_ERRORS.empty)
  refused(t, await watched(Buffer.from('Name,Email\nAda,ada@example.com\n')), PDF_ERRORS.notPdf)
  // Over the limit: refused at once, before a thread starts.
  const tooLarge = await watched(makePdf([['fine']]), { ...DEFAULT_PDF_LIMITS, maxBytes: 100 })
  refused(t, tooLarge, 'The PDF is larger than 100 bytes')
  t.ok(tooLarge.ms < 50, `refused after ${Math.round(tooLarge.ms)} ms`)
  t.equal(PDF_ERRORS.tooLarge(DEFAULT_PDF_LIMITS), 'The PDF is larger than 20 MiB')
  refused(t, await watched(passwordPdf()), 'The PDF is protected by a password: upload a copy without one')
})

t.test('a page tree of 10,000 pages is refused whole, before any page is read', async (t) => {
  const watch = await watched(manyPagesPdf(10_000))
  refused(t, watch, 'The PDF has 10000 pages, at most 500')
  bounded(t, watch, 10_000)
  t.comment(`10,000 pages: ${Math.round(watch.ms)} ms`)
})

t.test('objects nested 100,000 levels deep end with a clear error', async (t) => {
  const watch = await watched(deeplyNestedPdf(100_000))
  refused(t, watch, 'The PDF cannot be read: its objects are nested too deeply')
  bounded(t, watch, 10_000)
  t.comment(`nesting: ${Math.round(watch.ms)} ms`)
})

t.test('a stream that declares a length of 1 GB over a few bytes is read for what it holds', async (t) => {
  const watch = await watched(hugeLengthPdf())
  t.same(watch.outcome, { text: { pages: [{ number: 1, lines: [line('a short stream')] }] } })
  bounded(t, watch, 10_000)
  t.comment(`/Length 1 GB: ${Math.round(watch.ms)} ms`)
})

t.test('a FlateDecode stream inflating to 512 MiB is stopped at the buffer limit, not inflated', async (t) => {
  const bomb = await flateBombPdf(512 * MiB)
  t.ok(bomb.length < 3 * MiB, `the bomb is ${Math.round(bomb.length / 1024)} KiB`)
  const watch = await watched(bomb)
  refused(t, watch, 'The PDF needs too much memory to extract: a stream in it decodes to more than 64 MiB')
  // Inflated, it would have grown the process by 512 MiB at least.
  bounded(t, watch, 20_000)
  t.comment(`FlateDecode bomb: ${Math.round(watch.ms)} ms, the process grew by ${Math.round(watch.rssGrowth / MiB)} MiB`)
})

t.test('the limits of text, time and heap end the extraction with their errors', async (t) => {
  const pages = makePdf([['Twenty-one characters'.repeat(3), 'and more'], ['Twenty-one characters'.repeat(3)]])
  refused(t, await watched(pages, { ...DEFAULT_PDF_LIMITS, maxTextBytes: 100 }), 'The PDF has more than 100 bytes of text')
  t.ok('text' in (await watched(pages, { ...DEFAULT_PDF_LIMITS, maxTextBytes: 200 })).outcome, '200 bytes are enough for its 137')
  t.equal(PDF_ERRORS.tooMuchText(DEFAULT_PDF_LIMITS), 'The PDF has more than 5 MiB of text')

  const slow = await watched(pages, { ...DEFAULT_PDF_LIMITS, timeMs: 100 })
  refused(t, slow, 'The PDF took too long to extract (more than 0.1 s)')
  t.ok(slow.ms < 1000, `the thread was ended after ${Math.round(slow.ms)} ms`)

  // A 6.5 MB string: pdfjs's lexer holds it a character at a time, past a 32 MiB heap.
  const oneString = makePdf([['word '.repeat(1_300_000)]])
  const starved = await watched(oneString, { ...DEFAULT_PDF_LIMITS, heapMb: 32 })
  refused(t, starved, 'The PDF needs too much memory to extract (more than 32 MiB)')
  bounded(t, starved, 10_000)
  t.same(await extractPdf(makePdf([['after']])), { pages: [{ number: 1, lines: [line('after')] }] }, 'the next PDF is read')
})
