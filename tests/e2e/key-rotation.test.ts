/**
 * Rotating ENCRYPTION_KEY: `pnpm credentials:rotate` (run here as its own process, as an
 * operator would) re-encrypts every credential and chat account token under the new key,
 * reading them with the old one from ENCRYPTION_KEYS_PREVIOUS; afterwards processes that
 * know only the new key use them.
 */
import { createCipheriv, randomBytes } from 'node:crypto'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { createId } from '@paralleldrive/cuid2'
import postgres from 'postgres'
import t from 'tap'
import { createCredentialService } from '@switchboard/core/credentials'
import { createDatabase } from '@switchboard/core/db'
import { decryptSecret, encryptSecret, keyringOf } from '@switchboard/core/encryption'
import { createWorkflowService } from '@switchboard/core/workflows'
import { startDeliverySink } from '@switchboard/testing/delivery-sink'
import { createTestDatabase } from '@switchboard/testing/database'
import { startStack } from '@switchboard/testing/processes'

const run = promisify(execFile)

const OLD_KEY = randomBytes(32)
const NEW_KEY = randomBytes(32)
const TOKEN = 'rotated-bearer-token-55e1'
const SUBSCRIPTION_SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`
const CHAT_TOKEN = 'legacy-chat-token-a3b9'

/** A chat token as releases before key ids stored it: `v1.<iv>.<tag>.<ciphertext>`. */
function legacyEncrypt (key: Buffer, plaintext: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return ['v1', ...[iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'))].join('.')
}

const sink = await startDeliverySink(t, { answer: ({ headers }) => ({ status: headers.authorization === `Bearer ${TOKEN}` ? 200 : 401, body: '' }) })

const database = await createTestDatabase()
const sql = postgres(database.url, { max: 1, onnotice: () => {} })
t.teardown(async () => { await sql.end() })
const env = (key: Buffer, previous?: Buffer): Record<string, string> => ({
  HTTP_REQUEST_ALLOW_PRIVATE: 'true',
  ENCRYPTION_KEY: key.toString('base64'),
  ...(previous !== undefined && { ENCRYPTION_KEYS_PREVIOUS: previous.toString('base64') })
})
const rotate = async (key: Buffer, previous: Buffer) => await run(process.execPath, ['--conditions=@switchboard/source', '--import=tsx', 'packages/core/src/bin/rotate-encryption-key.ts'], {
  env: { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'info', ...env(key, previous) }
})
const stored = async () => [
  ...(await sql<Array<{ value: string }>>`select data_encrypted as value from credentials`).map(({ value }) => value),
  ...(await sql<Array<{ value: string }>>`select access_token_encrypted as value from chat_accounts`).map(({ value }) => value),
  ...(await sql<Array<{ value: string }>>`select secret_encrypted as value from event_subscriptions`).map(({ value }) => value)
]

// What a release running with the old key stored: a credential and a workflow using it, and a chat token from before key ids.
const oldDatabase = createDatabase(database.url, { max: 1 })
const [owner] = await sql`insert into users (id, email, password_hash, role) values (${createId()}, 'owner@example.com', 'x', 'admin') returning id`
const viewer = { id: owner!.id as string, role: 'admin' as const }
await createCredentialService({ db: oldDatabase.db, keyring: keyringOf({ encryptionKey: OLD_KEY, encryptionKeysPrevious: [] }) })
  .create(viewer, { name: 'crm', type: 'bearer', data: { token: TOKEN } })
const { id: workflowId } = await createWorkflowService({ db: oldDatabase.db, tools: { code: { check: async () => { throw new Error('no code nodes here') } } } })
  .create(viewer, { name: 'calls the crm', triggerType: 'MANUAL', isActive: true, nodes: [{ id: 'call', type: 'http_request', config: { url: sink.url, credential: 'crm' } }] })
await sql`insert into chat_accounts (id, user_id, name, phone_number_id, access_token_encrypted) values (${createId()}, ${viewer.id}, 'legacy', '100200300', ${legacyEncrypt(OLD_KEY, CHAT_TOKEN)})`
await sql`insert into event_subscriptions (id, user_id, url, events, secret_encrypted)
  values (${createId()}, ${viewer.id}, 'https://hooks.example.com/', '{workflow.run.failed}', ${encryptSecret(keyringOf({ encryptionKey: OLD_KEY, encryptionKeysPrevious: [] }), SUBSCRIPTION_SECRET)})`
await oldDatabase.close()

t.test('the rotation re-encrypts every stored secret under the new key; a second run finds nothing to do', async (t) => {
  const oldKeyring = keyringOf({ encryptionKey: OLD_KEY, encryptionKeysPrevious: [] })
  const newKeyring = keyringOf({ encryptionKey: NEW_KEY, encryptionKeysPrevious: [] })
  t.match(await stored(), [new RegExp(`^v2\\.${oldKeyring.current.id}\\.`), /^v1\./, new RegExp(`^v2\\.${oldKeyring.current.id}\\.`)])

  const first = await rotate(NEW_KEY, OLD_KEY)
  t.match(first.stdout, /"rotated":\{"credentials":1,"chat_accounts":1,"event_subscriptions":1\}/)
  const values = await stored()
  t.equal(values.length, 3)
  for (const value of values) t.ok(value.startsWith(`v2.${newKeyring.current.id}.`), 'under the new key')
  t.same(values.map((value) => decryptSecret(newKeyring, value)), [JSON.stringify({ token: TOKEN }), CHAT_TOKEN, SUBSCRIPTION_SECRET], 'the new key alone reads them')

  const second = await rotate(NEW_KEY, OLD_KEY)
  t.match(second.stdout, /"rotated":\{"credentials":0,"chat_accounts":0,"event_subscriptions":0\}/)
  t.same(await stored(), values, 'nothing rewritten')
})

t.test('without the key a value was encrypted with, the rotation stops naming the row, never the value', async (t) => {
  const failed = await rotate(randomBytes(32), randomBytes(32)).then(() => undefined, (err: { code: number, stdout: string }) => err)
  t.equal(failed?.code, 1)
  t.match(failed?.stdout, /credentials [a-z0-9]{24}: Encrypted with key [A-Za-z0-9_-]{11}, which is neither ENCRYPTION_KEY nor in ENCRYPTION_KEYS_PREVIOUS/)
  t.notMatch(failed?.stdout, TOKEN)
})

t.test('processes that know only the new key run the workflow with the rotated credential', async (t) => {
  const after = await startStack(t, { database, env: env(NEW_KEY) })
  // The installation's admin fires the owner's workflow; the run uses the owner's credential.
  const token = await after.adminToken()
  const ran = await after.client.runReaching(token, await after.client.fire(token, workflowId, {}))
  t.equal(ran.status, 'SUCCESS', ran.error ?? '')
  t.equal(sink.deliveries.at(-1)?.headers.authorization, `Bearer ${TOKEN}`)
})
