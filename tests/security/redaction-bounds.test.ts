import fc from 'fast-check'
import t from 'tap'
import { createRedactor, CREDENTIAL_MARKER, MIN_MASKED_LENGTH } from '@switchboard/core/credentials'

/**
 * The redactor's bounds for any secrets and any text (issue 23, item 1): one pass over the
 * original text, so the output is the text with disjoint stretches of at least MIN_MASKED_LENGTH
 * characters replaced by the marker, never longer than the text plus one marker's growth per
 * stretch, and no stretch left unmasked holds a secret.
 */

// Few letters, the marker's among them, so that secrets overlap each other, the marker and the text.
const letter = fc.constantFrom('c', 'r', 'e', 'd', '[', ']', 'a', 'l')
const secret = fc.string({ unit: letter, minLength: MIN_MASKED_LENGTH, maxLength: 16 })
const piece = (secrets: string[]) => fc.oneof(fc.constantFrom(...secrets, CREDENTIAL_MARKER), fc.string({ unit: letter, maxLength: 6 }))
const scenario = fc.array(secret, { minLength: 1, maxLength: 6 }).chain((secrets) =>
  fc.tuple(fc.constant(secrets), fc.array(piece(secrets), { maxLength: 60 }).map((pieces) => pieces.join(''))))

/** The masking the redactor must do, by the definition: at each place, the longest secret starting there. */
function reference (secrets: string[], text: string): string {
  const byLength = [...secrets].sort((a, b) => b.length - a.length)
  let masked = ''
  for (let i = 0; i < text.length;) {
    const found = byLength.find((candidate) => text.startsWith(candidate, i))
    if (found === undefined) masked += text[i++]
    else {
      masked += CREDENTIAL_MARKER
      i += found.length
    }
  }
  return masked
}

t.test('the output is the one-pass masking of the original text, never longer than the bound', async (t) => {
  fc.assert(fc.property(scenario, ([secrets, text]) => {
    const masked = createRedactor(secrets)(text)
    if (masked !== reference(secrets, text)) return false
    const markersAdded = Math.floor(text.length / MIN_MASKED_LENGTH)
    if (masked.length > text.length + markersAdded * (CREDENTIAL_MARKER.length - MIN_MASKED_LENGTH)) return false
    // What is left between markers holds no secret.
    return masked.split(CREDENTIAL_MARKER).every((rest) => secrets.every((value) => !rest.includes(value)))
  }), { numRuns: 2_000 })
  t.pass('2,000 scenarios')
})

t.test('secrets spelling the marker, in 1 MiB of its letters: linear time, no growth', async (t) => {
  const secrets = ['credential', '[credential]', 'redential]', '[credenti', 'credentialcredential']
  const text = 'credential'.repeat(104_858)
  const started = performance.now()
  const masked = createRedactor(secrets)(text)
  const elapsedMs = performance.now() - started
  t.equal(masked, CREDENTIAL_MARKER.repeat(52_429), 'the longest secret at each place, once')
  t.ok(elapsedMs < 1_000, `masked in ${Math.round(elapsedMs)} ms`)
})
