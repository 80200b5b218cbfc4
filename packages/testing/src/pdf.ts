/**
 * PDFs written by hand for the tests of PDF text extraction (@switchboard/core's knowledge/pdf.ts):
 * small valid ones with known text, and hostile ones, each made to exhaust one of the extraction's
 * bounds while staying small itself.
 */
import { once } from 'node:events'
import { constants, createDeflate } from 'node:zlib'

/** A line of a page: text in 12 pt Helvetica, or at the given size. */
export type PdfLine = string | { text: string, size: number }

/** A PDF object's body: PDF syntax, or a stream (its dictionary gets the stream's /Length unless it has one). */
type PdfObject = string | { dictionary: string, data: Buffer }

const FONT = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'
const MEDIA_BOX = '[0 0 612 792]'

/** A PDF string literal: backslashes and parentheses escaped. */
const literal = (text: string): string => `(${text.replace(/[\\()]/g, (c) => '\\' + c)})`

/**
 * Numbers the objects from 1 in order and writes the file: header, objects, the cross-reference
 * table with each object's byte offset, and the trailer (`trailer`: its entries besides /Size).
 */
function writePdf (objects: PdfObject[], trailer: string): Buffer {
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n', 'latin1')]
  let length = parts[0].length
  const push = (part: string | Buffer): void => {
    const bytes = typeof part === 'string' ? Buffer.from(part, 'latin1') : part
    parts.push(bytes)
    length += bytes.length
  }
  const offsets: number[] = []
  objects.forEach((object, i) => {
    offsets.push(length)
    if (typeof object === 'string') {
      push(`${i + 1} 0 obj\n${object}\nendobj\n`)
      return
    }
    const dictionary = object.dictionary.includes('/Length') ? object.dictionary : object.dictionary.replace(/^<</, `<< /Length ${object.data.length}`)
    push(`${i + 1} 0 obj\n${dictionary}\nstream\n`)
    push(object.data)
    push('\nendstream\nendobj\n')
  })
  const xref = length
  push(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`)
  push(`trailer\n<< /Size ${objects.length + 1} ${trailer} >>\nstartxref\n${xref}\n%%EOF\n`)
  return Buffer.concat(parts)
}

/** A page's content stream: the lines from the top down, each at its size. */
function pageContent (lines: PdfLine[]): Buffer {
  let y = 740
  const operators = lines.map((line) => {
    const { text, size } = typeof line === 'string' ? { text: line, size: 12 } : line
    y -= Math.round(size * 1.5)
    return `BT /F1 ${size} Tf 72 ${y} Td ${literal(text)} Tj ET`
  })
  return Buffer.from(operators.join('\n'), 'latin1')
}

/**
 * A PDF of a page per content stream, after the font F1 (object 1) and `before` (objects 2...),
 * with the page tree and catalog last. `page`: the page dictionaries' other entries; `fonts`:
 * their other fonts; `trailer`: the trailer's other entries.
 */
function pagedPdf (contents: PdfObject[], { before = [], page = '', fonts = '', trailer = '' }: { before?: PdfObject[], page?: string, fonts?: string, trailer?: string } = {}): Buffer {
  const objects: PdfObject[] = [FONT, ...before]
  const pagesId = objects.length + contents.length * 2 + 1
  const kids: number[] = []
  for (const content of contents) {
    objects.push(content)
    const contentId = objects.length
    objects.push(`<< /Type /Page /Parent ${pagesId} 0 R /MediaBox ${MEDIA_BOX} /Resources << /Font << /F1 1 0 R ${fonts}>> >> /Contents ${contentId} 0 R ${page}>>`)
    kids.push(objects.length)
  }
  objects.push(`<< /Type /Pages /Kids [${kids.map((kid) => `${kid} 0 R`).join(' ')}] /Count ${kids.length} >>`)
  objects.push(`<< /Type /Catalog /Pages ${pagesId} 0 R >>`)
  return writePdf(objects, `/Root ${objects.length} 0 R ${trailer}`)
}

/**
 * A valid PDF with the given pages, each line of text (latin1) on a line of its own. pdfjs leaves
 * out the text past the page's edges: about 90 characters to a line at 12 pt, 40 lines to a page.
 */
export function makePdf (pages: PdfLine[][]): Buffer {
  return pagedPdf(pages.map((lines) => ({ dictionary: '<< >>', data: pageContent(lines) })))
}

/**
 * One page of Japanese text, a line per string, in a font that embeds neither its glyphs nor its
 * character map: a reader maps the text through Adobe's predefined UniJIS-UCS2-H and
 * Adobe-Japan1-UCS2 maps, which it must have.
 */
export function japanesePdf (lines: string[]): Buffer {
  const name = '/KozMinPro-Regular'
  const fonts = [
    `<< /Type /Font /Subtype /Type0 /BaseFont ${name} /Encoding /UniJIS-UCS2-H /DescendantFonts [3 0 R] >>`,
    `<< /Type /Font /Subtype /CIDFontType0 /BaseFont ${name} /CIDSystemInfo << /Registry (Adobe) /Ordering (Japan1) /Supplement 2 >> /FontDescriptor 4 0 R >>`,
    `<< /Type /FontDescriptor /FontName ${name} /Flags 4 /FontBBox [0 0 1000 1000] /ItalicAngle 0 /Ascent 880 /Descent -120 /CapHeight 700 /StemV 80 >>`
  ]
  // UCS-2, big-endian, in hexadecimal: the codes UniJIS-UCS2-H maps.
  const content = lines.map((line, i) => `BT /F2 12 Tf 72 ${720 - i * 18} Td <${Buffer.from(line, 'utf16le').swap16().toString('hex')}> Tj ET`).join('\n')
  return pagedPdf([{ dictionary: '<< >>', data: Buffer.from(content, 'latin1') }], { before: fonts, fonts: '/F2 2 0 R' })
}

/**
 * One page whose resources hold an array nested `depth` levels deep (the parser's recursion),
 * and whose content has another.
 */
export function deeplyNestedPdf (depth = 100_000): Buffer {
  const nested = '['.repeat(depth) + ']'.repeat(depth)
  const content = `BT /F1 12 Tf 72 700 Td ${nested} pop (after the nesting) Tj ET`
  return pagedPdf([{ dictionary: '<< >>', data: Buffer.from(content, 'latin1') }], { page: `/Nested ${nested} ` })
}

/**
 * A page tree that says it has `count` pages, all of them sharing one content stream: about
 * 100 bytes a page.
 */
export function manyPagesPdf (count = 10_000): Buffer {
  const objects: PdfObject[] = [FONT, { dictionary: '<< >>', data: pageContent(['a page']) }]
  const pagesId = 3 + count
  const kids: number[] = []
  for (let i = 0; i < count; i++) {
    objects.push(`<< /Type /Page /Parent ${pagesId} 0 R /MediaBox ${MEDIA_BOX} /Resources << /Font << /F1 1 0 R >> >> /Contents 2 0 R >>`)
    kids.push(objects.length)
  }
  objects.push(`<< /Type /Pages /Kids [${kids.map((kid) => `${kid} 0 R`).join(' ')}] /Count ${count} >>`)
  objects.push(`<< /Type /Catalog /Pages ${pagesId} 0 R >>`)
  return writePdf(objects, `/Root ${objects.length} 0 R`)
}

/** One page whose content stream declares /Length 1000000000 (1 GB) over a few bytes of content. */
export function hugeLengthPdf (): Buffer {
  return pagedPdf([{ dictionary: '<< /Length 1000000000 >>', data: pageContent(['a short stream']) }])
}

/**
 * One page whose content stream is FlateDecode-compressed and inflates to `inflatedBytes` zero
 * bytes (whitespace to a PDF lexer): compressed about 1,000 to 1, written 1 MiB at a time so that
 * building it does not hold the inflated bytes.
 */
export async function flateBombPdf (inflatedBytes = 512 * 1024 * 1024): Promise<Buffer> {
  const deflate = createDeflate({ level: constants.Z_BEST_SPEED })
  const chunks: Buffer[] = []
  deflate.on('data', (chunk: Buffer) => { chunks.push(chunk) })
  const block = Buffer.alloc(1024 * 1024)
  for (let written = 0; written < inflatedBytes; written += block.length) {
    if (!deflate.write(block.subarray(0, Math.min(block.length, inflatedBytes - written)))) await once(deflate, 'drain')
  }
  deflate.end()
  await once(deflate, 'end')
  return pagedPdf([{ dictionary: '<< /Filter /FlateDecode >>', data: Buffer.concat(chunks) }])
}

/**
 * A PDF encrypted with the standard security handler (RC4, 40 bits) that has a user password:
 * its /O and /U entries match no empty password, so a reader asks for one.
 */
export function passwordPdf (): Buffer {
  const hex = (byte: number): string => byte.toString(16).padStart(2, '0').repeat(32)
  return pagedPdf([{ dictionary: '<< >>', data: pageContent(['secret']) }], {
    before: [`<< /Filter /Standard /V 1 /R 2 /Length 40 /P -44 /O <${hex(0x4f)}> /U <${hex(0x55)}> >>`],
    trailer: `/Encrypt 2 0 R /ID [<${hex(0x11).slice(0, 32)}> <${hex(0x11).slice(0, 32)}>]`
  })
}
