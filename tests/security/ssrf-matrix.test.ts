import t from 'tap'
import { blockedAddressReason, resolveAllowedAddress, type LookupAll } from '@switchboard/core/engine'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { startStack, type Stack } from '@switchboard/testing/processes'
import type { RunBody } from '@switchboard/testing/client'

/*
 * Network rule: nothing here leaves the machine even if the guard were broken.
 * Blocked addresses are checked through the classifier only; names are resolved
 * by an injected lookup (always for "localhost", so that an implementation that
 * ignored it would read /etc/hosts, not ask a DNS server); end-to-end targets are
 * on loopback, except one redirect to 169.254.169.254 (link-local, never routed
 * off the local link), sent only after the classifier refuses it: the connector
 * dials only after the check has passed.
 */

const ALLOWED = undefined
const PRIVATE = 'private'
const LINK_LOCAL = 'link-local'
const METADATA = 'cloud metadata'
type Expected = typeof ALLOWED | typeof PRIVATE | typeof LINK_LOCAL | typeof METADATA

/** address → [without HTTP_REQUEST_ALLOW_PRIVATE, with it]; the refusal names the address as written in `shown`. */
const MATRIX: Array<{ address: string, shown?: string, expected: [Expected, Expected], what: string }> = [
  { address: '127.0.0.1', expected: [PRIVATE, ALLOWED], what: 'loopback' },
  { address: '127.255.255.254', expected: [PRIVATE, ALLOWED], what: 'loopback, end of range' },
  { address: '::1', expected: [PRIVATE, ALLOWED], what: 'IPv6 loopback' },
  { address: '0.0.0.0', expected: [PRIVATE, ALLOWED], what: 'unspecified (dials this host)' },
  { address: '::', expected: [PRIVATE, ALLOWED], what: 'IPv6 unspecified' },
  { address: '10.0.0.1', expected: [PRIVATE, ALLOWED], what: 'RFC 1918' },
  { address: '172.16.5.4', expected: [PRIVATE, ALLOWED], what: 'RFC 1918' },
  { address: '192.168.1.1', expected: [PRIVATE, ALLOWED], what: 'RFC 1918' },
  { address: '100.64.0.1', expected: [PRIVATE, ALLOWED], what: 'CGNAT' },
  { address: 'fd12:3456::1', expected: [PRIVATE, ALLOWED], what: 'IPv6 unique local' },
  { address: '224.0.0.1', expected: [PRIVATE, ALLOWED], what: 'multicast' },
  { address: '169.254.1.1', expected: [LINK_LOCAL, LINK_LOCAL], what: 'IPv4 link-local' },
  { address: '169.254.255.254', expected: [LINK_LOCAL, LINK_LOCAL], what: 'IPv4 link-local, end of range' },
  { address: 'fe80::1', expected: [LINK_LOCAL, LINK_LOCAL], what: 'IPv6 link-local' },
  { address: '169.254.169.254', expected: [METADATA, METADATA], what: 'AWS/GCP/Azure metadata' },
  { address: '169.254.170.2', expected: [METADATA, METADATA], what: 'ECS task credentials' },
  { address: '169.254.170.23', expected: [METADATA, METADATA], what: 'EKS Pod Identity' },
  { address: 'fd00:ec2::254', expected: [METADATA, METADATA], what: 'AWS metadata over IPv6' },
  { address: 'fd00:ec2:0::23', shown: 'fd00:ec2::23', expected: [METADATA, METADATA], what: 'EKS Pod Identity over IPv6' },
  { address: '100.100.100.200', expected: [METADATA, METADATA], what: 'Alibaba metadata' },
  { address: '168.63.129.16', expected: [METADATA, METADATA], what: 'Azure wire server' },
  { address: '192.0.0.192', expected: [METADATA, METADATA], what: 'Oracle classic metadata' },
  // IPv4-mapped: judged as the IPv4 address it is.
  { address: '::ffff:127.0.0.1', shown: '127.0.0.1', expected: [PRIVATE, ALLOWED], what: 'IPv4-mapped loopback' },
  { address: '::ffff:7f00:1', shown: '127.0.0.1', expected: [PRIVATE, ALLOWED], what: 'IPv4-mapped loopback, hex' },
  { address: '::ffff:169.254.169.254', shown: '169.254.169.254', expected: [METADATA, METADATA], what: 'IPv4-mapped metadata' },
  // IPv4-compatible (deprecated) and SIIT-translated forms.
  { address: '::7f00:1', expected: [PRIVATE, ALLOWED], what: 'IPv4-compatible loopback (what URL parsing makes of [::127.0.0.1])' },
  { address: '::a9fe:a9fe', expected: [METADATA, METADATA], what: 'IPv4-compatible metadata' },
  { address: '::808:808', expected: [PRIVATE, ALLOWED], what: 'IPv4-compatible public address (deprecated form)' },
  { address: '::ffff:0:a9fe:a9fe', expected: [METADATA, METADATA], what: 'IPv4-translated metadata' },
  // NAT64: the translator forwards to the IPv4 address inside.
  { address: '64:ff9b::a9fe:a9fe', expected: [METADATA, METADATA], what: 'NAT64 (well-known prefix) metadata' },
  { address: '64:ff9b::169.254.170.2', shown: '64:ff9b::a9fe:aa02', expected: [METADATA, METADATA], what: 'NAT64 ECS credentials' },
  { address: '64:ff9b::a9fe:101', expected: [LINK_LOCAL, LINK_LOCAL], what: 'NAT64 link-local' },
  { address: '64:ff9b::7f00:1', expected: [PRIVATE, ALLOWED], what: 'NAT64 loopback' },
  { address: '64:ff9b::a00:1', expected: [PRIVATE, ALLOWED], what: 'NAT64 RFC 1918' },
  { address: '64:ff9b::808:808', expected: [ALLOWED, ALLOWED], what: 'NAT64 public address (DNS64 on an IPv6-only network)' },
  { address: '64:ff9b:1::a9fe:a9fe', expected: [METADATA, METADATA], what: 'local-use NAT64, /96 prefix' },
  { address: '64:ff9b:1:a9fe:a9:fe00::', expected: [METADATA, METADATA], what: 'local-use NAT64, /48 prefix' },
  { address: '64:ff9b:1::808:808', expected: [PRIVATE, ALLOWED], what: 'local-use NAT64 is a private network' },
  // 6to4 and Teredo tunnel to the IPv4 addresses they carry.
  { address: '2002:a9fe:a9fe::1', expected: [METADATA, METADATA], what: '6to4 relay at the metadata address' },
  { address: '2002:808:808::1', expected: [PRIVATE, ALLOWED], what: '6to4' },
  { address: '2001:0:a9fe:a9fe::1', expected: [METADATA, METADATA], what: 'Teredo server at the metadata address' },
  { address: '2001:0:808:808:0:0:5601:5601', shown: '2001:0:808:808::5601:5601', expected: [METADATA, METADATA], what: 'Teredo client (inverted) at the metadata address' },
  { address: '8.8.8.8', expected: [ALLOWED, ALLOWED], what: 'public IPv4' },
  { address: '2606:4700:4700::1111', expected: [ALLOWED, ALLOWED], what: 'public IPv6' }
]

const reasonFor = (expected: Expected, shown: string): string | undefined =>
  expected === ALLOWED ? undefined : `Blocked request to ${expected} address ${shown}`

t.test('the classifier, address by address, without and with HTTP_REQUEST_ALLOW_PRIVATE', async (t) => {
  for (const { address, shown, expected, what } of MATRIX) {
    t.equal(blockedAddressReason(address, false), reasonFor(expected[0], shown ?? address), `${address} (${what}), private not allowed`)
    t.equal(blockedAddressReason(address, true), reasonFor(expected[1], shown ?? address), `${address} (${what}), private allowed`)
  }
  t.equal(blockedAddressReason('not-an-address', true), 'Blocked request to invalid address not-an-address')
})

t.test('numeric URL hosts: WHATWG URL parsing normalizes them, then the guard judges the result', async (t) => {
  const cases: Array<[url: string, hostname: string, allowPrivate: boolean, reason: string]> = [
    ['http://2130706433/', '127.0.0.1', false, 'Blocked request to private address 127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1', false, 'Blocked request to private address 127.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1', false, 'Blocked request to private address 127.0.0.1'],
    ['http://127.1/', '127.0.0.1', false, 'Blocked request to private address 127.0.0.1'],
    ['http://0/', '0.0.0.0', false, 'Blocked request to private address 0.0.0.0'],
    ['http://[::ffff:127.0.0.1]/', '[::ffff:7f00:1]', false, 'Blocked request to private address 127.0.0.1'],
    ['http://[::127.0.0.1]/', '[::7f00:1]', false, 'Blocked request to private address ::7f00:1'],
    ['http://2852039166/', '169.254.169.254', true, 'Blocked request to cloud metadata address 169.254.169.254'],
    ['http://0xa9.0xfe.0xa9.0xfe/', '169.254.169.254', true, 'Blocked request to cloud metadata address 169.254.169.254'],
    ['http://0251.0376.0251.0376/', '169.254.169.254', true, 'Blocked request to cloud metadata address 169.254.169.254'],
    ['http://[64:ff9b::169.254.169.254]/', '[64:ff9b::a9fe:a9fe]', true, 'Blocked request to cloud metadata address 64:ff9b::a9fe:a9fe']
  ]
  for (const [url, hostname, allowPrivate, reason] of cases) {
    const parsed = new URL(url)
    t.equal(parsed.hostname, hostname, `${url} is parsed as ${hostname}`)
    // undici hands the connector the hostname without the IPv6 brackets.
    await t.rejects(resolveAllowedAddress(parsed.hostname.replace(/^\[|\]$/g, ''), allowPrivate), { name: 'BlockedAddressError', message: reason }, url)
  }
})

t.test('names: every address they resolve to is checked, and a refusal never tells which', async (t) => {
  const answering = (...addresses: string[]): LookupAll => async (hostname) => {
    t.equal(hostname, 'localhost', 'only the name asked for is looked up')
    return addresses
  }
  const refuses = async (addresses: string[], allowPrivate: boolean, message: string): Promise<void> => {
    await t.rejects(resolveAllowedAddress('localhost', allowPrivate, answering(...addresses)), { name: 'BlockedAddressError', message }, `${addresses.join(', ')} (private ${allowPrivate ? '' : 'not '}allowed)`)
  }
  await refuses(['10.0.0.5'], false, 'Blocked request to private address')
  await refuses(['8.8.8.8', '10.0.0.5'], false, 'Blocked request to private address')
  await refuses(['::ffff:127.0.0.1'], false, 'Blocked request to private address')
  await refuses(['169.254.169.254'], true, 'Blocked request to cloud metadata address')
  await refuses(['8.8.8.8', 'fd00:ec2::23'], true, 'Blocked request to cloud metadata address')
  await refuses(['64:ff9b::a9fe:a9fe'], true, 'Blocked request to cloud metadata address')
  await refuses(['fe80::1'], true, 'Blocked request to link-local address')
  await refuses(['169.254.3.4'], true, 'Blocked request to link-local address')
  t.equal(await resolveAllowedAddress('localhost', true, answering('10.0.0.5')), '10.0.0.5', 'a private answer passes when allowed')
  t.equal(await resolveAllowedAddress('localhost', false, answering('8.8.8.8', '2606:4700:4700::1111')), '8.8.8.8', 'public answers pass')
  await t.rejects(resolveAllowedAddress('localhost', true, answering()), { message: 'Could not resolve localhost' })

  // The real resolver, for a name it answers from /etc/hosts.
  await t.rejects(resolveAllowedAddress('localhost', false), { name: 'BlockedAddressError', message: 'Blocked request to private address' })
  t.match(await resolveAllowedAddress('localhost', true), /^(127\.0\.0\.1|::1)$/)

  // Metadata names are refused before any lookup.
  const never: LookupAll = async () => { throw new Error('looked up') }
  for (const name of ['metadata.google.internal', 'METADATA.Google.Internal.', 'metadata', 'instance-data.ec2.internal']) {
    await t.rejects(resolveAllowedAddress(name, true, never), { name: 'BlockedAddressError', message: /^Blocked request to cloud metadata host / }, name)
  }
})

const runOf = async (stack: Stack, token: string, url: string): Promise<RunBody> =>
  stack.client.runWorkflow(token, { name: 'ssrf', nodes: [{ id: 'call', type: 'http_request', config: { url } }] }, {}, { statuses: ['SUCCESS', 'FAILED'] })

t.test('end to end, HTTP_REQUEST_ALLOW_PRIVATE=false: loopback in every spelling is refused before connecting', async (t) => {
  const sink = await startDeliverySink(t)
  const stack = await startStack(t)
  const token = await stack.adminToken()
  const refused: Array<[url: string, error: string]> = [
    [`http://127.0.0.1:${new URL(sink.url).port}/`, 'Blocked request to private address 127.0.0.1'],
    [`http://2130706433:${new URL(sink.url).port}/`, 'Blocked request to private address 127.0.0.1'],
    [`http://0x7f.1:${new URL(sink.url).port}/`, 'Blocked request to private address 127.0.0.1'],
    [`http://[::ffff:127.0.0.1]:${new URL(sink.url).port}/`, 'Blocked request to private address 127.0.0.1'],
    // A name: the error does not say what it resolved to.
    [`http://localhost:${new URL(sink.url).port}/`, 'Blocked request to private address']
  ]
  for (const [url, error] of refused) t.match(await runOf(stack, token, url), { status: 'FAILED', error }, url)
  t.equal(sink.deliveries.length, 0, 'the sink was never reached')
})

t.test('end to end, HTTP_REQUEST_ALLOW_PRIVATE=true: a redirect from an allowed loopback server to the metadata address is refused', async (t) => {
  // Safety first: the redirect below is sent only if the guard refuses its target.
  if (blockedAddressReason('169.254.169.254', true) === undefined) throw new Error('the guard lets 169.254.169.254 through: not sending the redirect')
  const upstream = await startDeliverySink(t, {
    answer: ({ path }) => path === '/to-metadata' ? { status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/iam/security-credentials/' } } : {}
  })
  const stack = await startStack(t, { env: { HTTP_REQUEST_ALLOW_PRIVATE: 'true' } })
  const token = await stack.adminToken()

  const allowed = await runOf(stack, token, `${upstream.url}/hello`)
  t.equal(allowed.status, 'SUCCESS', 'loopback is reachable when private addresses are allowed')
  const redirected = await runOf(stack, token, `${upstream.url}/to-metadata`)
  t.match(redirected, { status: 'FAILED', error: 'Blocked request to cloud metadata address 169.254.169.254' })
  t.equal(upstream.deliveries.length, 2, 'the first hop was served, and nothing else')
})
