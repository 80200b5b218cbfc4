/**
 * The contacts' CSV import at its documented bounds, from a client that takes longer than the
 * api's 30 s request timeout to send it: the import has a timeout of its own and answers 200
 * with every row; any other route keeps the 30 s (README, Contacts and consent). Before, the
 * import was cut by the api's 30 s with 408, its rows written in part.
 */
import { request as httpRequest } from 'node:http'
import t from 'tap'
import { fakeChatEnv, startFakeChatPlatform } from '@switchboard/testing/fake-chat-platform'
import { startStack } from '@switchboard/testing/processes'

t.setTimeout(180_000)

const ROWS = 100_000
/** The body is sent over this long: past every other route's 30 s, and past the 60 s by which Node's own timeout (checked every 30 s) had cut it. */
const SEND_MS = 62_000
const REQUEST_TIMEOUT_MS = 30_000

const platform = await startFakeChatPlatform()
t.teardown(async () => { await platform.close() })
const stack = await startStack(t, { workers: 0, env: fakeChatEnv(platform, { phoneNumberId: '106540352242922', appSecret: 'import-app-secret' }) })
const token = await stack.adminToken()

/** Sends `body` in `chunks` parts spread over `sendMs`, and resolves with the answer and when it came. */
async function slowPost (path: string, contentType: string, body: Buffer, chunks: number, sendMs: number): Promise<{ status: number, body: any, afterMs: number }> {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${stack.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': contentType, 'content-length': body.length }
    }, (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => {
        clearInterval(sender)
        resolve({ status: res.statusCode!, body: JSON.parse(text), afterMs: Date.now() - started })
      })
    })
    req.on('error', reject)
    const size = Math.ceil(body.length / chunks)
    let offset = 0
    const sender = setInterval(() => {
      if (offset >= body.length) return
      req.write(body.subarray(offset, offset + size))
      offset += size
      if (offset >= body.length) req.end()
    }, sendMs / chunks)
  })
}

t.test(`${ROWS} rows sent over ${SEND_MS / 1000} s are all imported, 200; a JSON body as slow is cut at 30 s`, async (t) => {
  const lines = ['phone,name,labels,attr.plan']
  for (let i = 0; i < ROWS; i++) lines.push(`+4917${String(i).padStart(8, '0')},Customer number ${i},import;batch-${i % 10},plan-${i % 3}`)
  const csv = Buffer.from(lines.join('\n') + '\n')
  t.ok(csv.length > 5 * 1024 * 1024, `the file is over 5 MiB (${csv.length} bytes)`)

  const json = Buffer.from(JSON.stringify({ name: 'slow', triggerType: 'MANUAL', nodes: [{ id: 'n', type: 'set', config: { values: {} } }] }))
  const [imported, cut] = await Promise.all([
    slowPost('/api/chat/contacts/import', 'text/csv', csv, 80, SEND_MS),
    slowPost('/api/automation/workflows', 'application/json', json, json.length, SEND_MS)
  ])
  t.comment(`import answered ${imported.status} after ${imported.afterMs} ms; the slow JSON body ${cut.status} after ${cut.afterMs} ms`)
  t.equal(imported.status, 200, 'the import answers 200')
  t.match(imported.body, { imported: ROWS, updated: 0, skippedCount: 0 })
  const stored = await stack.call('GET', '/api/chat/contacts?search=%2B4917000999&limit=500', { token })
  t.equal(stored.body.length, 100, 'the last rows are stored')

  t.match(cut, { status: 408, body: { statusCode: 408, code: 'REQUEST_TIMEOUT', message: 'Request timeout' } }, 'another route still times out')
  t.ok(cut.afterMs >= REQUEST_TIMEOUT_MS && cut.afterMs < REQUEST_TIMEOUT_MS + 5000, `within its 30 s (${cut.afterMs} ms)`)
})
