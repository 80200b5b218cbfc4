import t from 'tap'
import { secretValues } from '../src/credentials/data.ts'
import { createRedactor, CREDENTIAL_MARKER } from '../src/credentials/redaction.ts'

const secret = 'Tok en:@/+="\'é\\x'

t.test('every form the request path gives a value is replaced, in strings, keys and nested values', async (t) => {
  const redact = createRedactor([secret])
  const inPath = new URL('http://example.com/')
  inPath.pathname = `/p/${secret}`
  const inQuery = new URL(`http://example.com/?q=${secret}`)
  const inForm = new URL('http://example.com/')
  inForm.searchParams.append('q', secret)
  const inUserInfo = new URL('http://example.com/')
  inUserInfo.password = secret
  const value = {
    raw: `Bearer ${secret}`,
    json: JSON.stringify({ token: secret }),
    asciiJson: JSON.stringify({ token: secret }).replace('é', '\\u00e9'),
    component: `https://example.com/?k=${encodeURIComponent(secret)}`,
    path: inPath.href,
    query: inQuery.href,
    form: inForm.href,
    userInfo: inUserInfo.href,
    [secret]: [1, { deep: secret }],
    untouched: 42
  }
  const redacted = redact(value)
  t.same(redacted, {
    raw: `Bearer ${CREDENTIAL_MARKER}`,
    json: `{"token":"${CREDENTIAL_MARKER}"}`,
    asciiJson: `{"token":"${CREDENTIAL_MARKER}"}`,
    component: `https://example.com/?k=${CREDENTIAL_MARKER}`,
    path: `http://example.com/p/${CREDENTIAL_MARKER}`,
    query: `http://example.com/?q=${CREDENTIAL_MARKER}`,
    form: `http://example.com/?q=${CREDENTIAL_MARKER}`,
    userInfo: `http://:${CREDENTIAL_MARKER}@example.com/`,
    [CREDENTIAL_MARKER]: [1, { deep: CREDENTIAL_MARKER }],
    untouched: 42
  })
})

t.test('a host name is matched lowercased, and in its IDNA form', async (t) => {
  const redact = createRedactor(['Api-Host.Example', 'bücher-tenant.example'])
  t.equal(redact(new URL('https://Api-Host.Example/x').href), `https://${CREDENTIAL_MARKER}/x`)
  t.equal(redact(new URL('https://bücher-tenant.example/x').href), `https://${CREDENTIAL_MARKER}/x`)
})

t.test('at each place the leftmost, then longest, value is replaced; the text goes on after it', async (t) => {
  t.equal(createRedactor(['abcdefgh', 'abcdefghijkl'])('xabcdefghijklx abcdefghx'), `x${CREDENTIAL_MARKER}x ${CREDENTIAL_MARKER}x`)
  // zab… starts first; cd… then starts where it ends, although the longer abcd… overlapped both.
  t.equal(createRedactor(['zzzzzzab', 'abcdwxyz123', 'cdwxyz12'])('zzzzzzabcdwxyz12!'), `${CREDENTIAL_MARKER}${CREDENTIAL_MARKER}!`)
})

t.test('markers are never searched again: values spelling the marker cannot grow the text', async (t) => {
  const redact = createRedactor(['credential', '[credential]', 'redential]', '[credenti'])
  const text = 'credential'.repeat(1000)
  const redacted = redact(text)
  t.equal(redacted, CREDENTIAL_MARKER.repeat(1000))
  t.ok(redacted.length <= text.length * 1.5)
})

t.test('values shorter than 8 characters are replaced only where a whole string is one', async (t) => {
  const redact = createRedactor(['e', '4711'])
  t.same(redact({ pin: '4711', text: 'the pin is 4711', key: 'e' }), { pin: CREDENTIAL_MARKER, text: 'the pin is 4711', key: CREDENTIAL_MARKER })
})

t.test('what holds no secret comes back as the same object', async (t) => {
  const clean = { a: ['b', { c: 'd' }] }
  t.equal(createRedactor(['abcdefgh'])(clean), clean)
  t.equal(createRedactor([])('abc'), 'abc')
})

t.test('an mcp credential: its url, its headers\' text and each header value are masked (README, MCP client)', async (t) => {
  const data = { url: 'https://mcp.example.com/s/path-token-9c2/mcp', headers: '{"Authorization": "Bearer mcp-token-4e1", "X-Tenant": "tenant-acme-01"}' }
  const values = secretValues('mcp', data)
  t.same(values, [data.url, data.headers, 'Bearer mcp-token-4e1', 'tenant-acme-01'])
  const redact = createRedactor(values)
  t.same(redact({ echoed: 'sent Bearer mcp-token-4e1 for tenant-acme-01 to https://mcp.example.com/s/path-token-9c2/mcp' }),
    { echoed: `sent ${CREDENTIAL_MARKER} for ${CREDENTIAL_MARKER} to ${CREDENTIAL_MARKER}` })
  t.same(secretValues('mcp', { url: data.url }), [data.url], 'without headers, the url alone')
})
