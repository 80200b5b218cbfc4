import { Transform } from 'node:stream'

/**
 * tap's reporter for this project (package.json, "tap"): the TAP stream as it is, closed by the
 * ten slowest test files of the run, each with the time tap gives it (from its first test to its
 * end: the second or so its process takes to load comes on top), so that a file that grows slower
 * is seen in every run (docs/testing.md).
 */
const SHOWN = 10
const FILE_RESULT = /^(?:not )?ok \d+ - (\S+) # time=([0-9.]+)ms/

export default class SlowestFiles extends Transform {
  #partial = ''
  /** @type {Array<{ file: string, ms: number }>} */
  #files = []

  _transform (chunk, _encoding, callback) {
    const lines = (this.#partial + chunk.toString()).split('\n')
    this.#partial = lines.pop() ?? ''
    for (const line of lines) this.#note(line)
    callback(null, chunk)
  }

  _flush (callback) {
    this.#note(this.#partial)
    const slowest = this.#files.sort((a, b) => b.ms - a.ms).slice(0, SHOWN)
    const width = Math.max(0, ...slowest.map(({ ms }) => (ms / 1000).toFixed(1).length))
    const lines = slowest.map(({ file, ms }) => `#   ${(ms / 1000).toFixed(1).padStart(width)} s  ${file}\n`)
    const title = slowest.length === 1 ? 'the slowest file' : `the ${slowest.length} slowest files`
    callback(null, slowest.length === 0 ? '' : `# ${title}:\n${lines.join('')}`)
  }

  #note (line) {
    const result = FILE_RESULT.exec(line)
    if (result !== null) this.#files.push({ file: result[1], ms: Number(result[2]) })
  }
}
