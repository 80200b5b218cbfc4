import t from 'tap'
import { createRedactor, CREDENTIAL_MARKER } from '../src/credentials/redaction.ts'

const secret = 'p@ss "word"/ü'

t.test('every echoed form of a value is replaced, in strings, keys and nested values', async (t) => {
  const redact = createRedactor([secret])
  const value = {
    raw: `Bearer ${secret}`,
    json: JSON.stringify({ token: secret }),
    url: `https://example.com/?k=${encodeURIComponent(secret)}`,
    [secret]: [1, { deep: secret }],
    untouched: 42
  }
  t.same(redact(value), {
    raw: `Bearer ${CREDENTIAL_MARKER}`,
    json: `{"token":"${CREDENTIAL_MARKER}"}`,
    url: `https://example.com/?k=${CREDENTIAL_MARKER}`,
    [CREDENTIAL_MARKER]: [1, { deep: CREDENTIAL_MARKER }],
    untouched: 42
  })
})

t.test('a value containing another is replaced whole; what holds no secret comes back as the same object', async (t) => {
  const redact = createRedactor(['abc', 'abcdef'])
  t.equal(redact('xabcdefx'), `x${CREDENTIAL_MARKER}x`)
  const clean = { a: ['b', { c: 'd' }] }
  t.equal(redact(clean), clean)
  const none = createRedactor([])
  t.equal(none('abc'), 'abc')
})
