import t from 'tap'
import { request } from 'undici'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { blockedAddressReason, createHttpClient } from '../src/engine/nodes/http-client.ts'

t.test('only global unicast addresses pass without HTTP_REQUEST_ALLOW_PRIVATE', async (t) => {
  for (const address of ['10.0.0.1', '172.16.5.4', '192.168.1.1', '127.0.0.1', '0.0.0.0', '100.64.0.1', '169.254.10.10', '224.0.0.1', '::1', 'fe80::1', 'fd12:3456::1', '::ffff:10.0.0.1', '64:ff9b::a00:1', '2002:a00:1::1']) {
    t.ok(blockedAddressReason(address, false), `${address} is refused`)
    t.notOk(blockedAddressReason(address, true)?.includes('private'), `${address} passes when private addresses are allowed`)
  }
  t.equal(blockedAddressReason('::ffff:10.0.0.1', false), 'Blocked request to private address 10.0.0.1', 'IPv4-mapped IPv6 is judged as IPv4')
  for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) t.equal(blockedAddressReason(address, false), undefined, `${address} passes`)
})

t.test('cloud metadata addresses are refused even when private addresses are allowed', async (t) => {
  t.equal(blockedAddressReason('169.254.169.254', true), 'Blocked request to cloud metadata address 169.254.169.254')
  t.equal(blockedAddressReason('fd00:ec2:0::254', true), 'Blocked request to cloud metadata address fd00:ec2::254')
  t.equal(blockedAddressReason('::ffff:169.254.169.254', true), 'Blocked request to cloud metadata address 169.254.169.254')
})

t.test('every connection is checked before it is made (the http_request node makes one per redirect hop)', async (t) => {
  const sink = await startDeliverySink(t, { answer: () => ({ headers: {}, body: 'ok' }) })
  const client = createHttpClient({ allowPrivate: true })
  t.teardown(client.close)
  const ok = await request(`${sink.url}/`, { dispatcher: client.dispatcher })
  t.equal(await ok.body.text(), 'ok')
  await t.rejects(request('http://169.254.169.254/latest/meta-data/', { dispatcher: client.dispatcher }), { name: 'BlockedAddressError', message: 'Blocked request to cloud metadata address 169.254.169.254' })
  await t.rejects(request('http://metadata.google.internal/', { dispatcher: client.dispatcher }), { message: 'Blocked request to cloud metadata host metadata.google.internal' })
})
