/**
 * PostgreSQL over TLS (README, "Operations"): `sslmode=verify-full` in DATABASE_URL (or
 * DATABASE_MIGRATION_URL) makes the client check the server's certificate against Node's trusted
 * CAs (NODE_EXTRA_CA_CERTS adds a private one) and its name against the URL's host; `require`
 * encrypts without checking either; without sslmode the client does not ask for TLS. The server:
 * the real one behind a loopback proxy that answers PostgreSQL's SSLRequest and terminates TLS
 * with a certificate for `localhost` from a CA of the test's own, and refuses plain connections.
 * The client: the migrate command, a process of its own as in production.
 */
import { once } from 'node:events'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSecureContext, TLSSocket, type SecureContext } from 'node:tls'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { makeCertificates } from '@switchboard/testing/certificates'
import { BASE_DATABASE_URL, createTestDatabase } from '@switchboard/testing/database'
import { spawnTied } from '@switchboard/testing/processes'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
/** The first message of a client that wants TLS: length 8, then the SSLRequest code. */
const SSL_REQUEST_CODE = 80877103

const dir = await mkdtemp(join(tmpdir(), 'switchboard-pg-tls-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
/** A certificate for `localhost`, and one (of another CA) for a name the URL does not use. */
const [forLocalhost, forAnotherName] = await Promise.all([
  makeCertificates(await mkdtemp(join(dir, 'localhost-')), ['DNS:localhost']),
  makeCertificates(await mkdtemp(join(dir, 'other-')), ['DNS:db.internal'])
])
const contextOf = async ({ cert, key }: { cert: string, key: string }): Promise<SecureContext> =>
  createSecureContext({ cert: await readFile(cert), key: await readFile(key) })
const contexts = { localhost: await contextOf(forLocalhost), anotherName: await contextOf(forAnotherName) }
/** The certificate the proxy presents. */
let presented = contexts.localhost
const database = await createTestDatabase()
t.teardown(database.drop)

const server = new URL(BASE_DATABASE_URL)
let tlsSessions = 0
const sockets = new Set<Socket>()

/** What a server whose pg_hba.conf has only `hostssl` lines answers a plain connection. */
function noEncryptionResponse (startup: Buffer): Buffer {
  // StartupMessage: length, protocol version, then name/value pairs ending in an empty name.
  const pairs = startup.subarray(8).toString('utf8').split('\0')
  const parameters = new Map<string, string>()
  for (let i = 0; i + 1 < pairs.length && pairs[i] !== ''; i += 2) parameters.set(pairs[i]!, pairs[i + 1]!)
  const message = `no pg_hba.conf entry for host "127.0.0.1", user "${parameters.get('user')}", database "${parameters.get('database')}", no encryption`
  const fields = Buffer.from(`SFATAL\0VFATAL\0C28000\0M${message}\0\0`)
  const head = Buffer.alloc(5)
  head.write('E')
  head.writeInt32BE(fields.length + 4, 1)
  return Buffer.concat([head, fields])
}

function proxy (client: Socket): void {
  sockets.add(client)
  client.on('close', () => { sockets.delete(client) })
  client.on('error', () => { client.destroy() })
  client.once('data', (first: Buffer) => {
    if (first.length !== 8 || first.readInt32BE(4) !== SSL_REQUEST_CODE) {
      client.end(noEncryptionResponse(first))
      return
    }
    client.write('S')
    const secure = new TLSSocket(client, { isServer: true, secureContext: presented })
    secure.once('secure', () => { tlsSessions += 1 })
    secure.on('error', () => { client.destroy() })
    const upstream = connect(Number(server.port || 5432), server.hostname)
    upstream.on('error', () => { client.destroy() })
    client.on('close', () => { upstream.destroy() })
    secure.pipe(upstream).pipe(secure)
  })
}

// `localhost` may resolve to ::1 first: the proxy answers there too when the machine has IPv6.
const listeners: Server[] = []
const first = createServer(proxy).listen(0, '127.0.0.1')
await once(first, 'listening')
listeners.push(first)
const port = (first.address() as AddressInfo).port
const second = createServer(proxy)
await new Promise<void>((resolve) => {
  second.once('error', () => { resolve() })
  second.listen(port, '::1', () => { listeners.push(second); resolve() })
})
t.teardown(() => {
  for (const socket of sockets) socket.destroy()
  for (const listener of listeners) listener.close()
})

const urlFor = (host: string, sslmode?: string): string => {
  const url = new URL(database.url)
  url.hostname = host
  url.port = String(port)
  if (sslmode !== undefined) url.searchParams.set('sslmode', sslmode)
  return url.toString()
}

/** The migrate command's exit code, its output, and the message of its last log line. */
async function migrate (url: string, extraCa?: string): Promise<{ code: number | null, output: string, message: string }> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, DATABASE_MIGRATION_URL: url, ...(extraCa !== undefined && { NODE_EXTRA_CA_CERTS: extraCa }) }
  const child = spawnTied(process.execPath, ['--conditions=@switchboard/source', '--import=tsx', 'packages/core/src/bin/migrate.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const [code] = await once(child, 'exit') as [number | null]
  const last = output.trim().split('\n').at(-1) ?? ''
  return { code, output, message: last.startsWith('{') ? (JSON.parse(last) as { msg: string }).msg : last }
}

t.test('verify-full: a server whose certificate a trusted CA signed for the URL\'s host', async (t) => {
  const before = tlsSessions
  const { code, output } = await migrate(urlFor('localhost', 'verify-full'), forLocalhost.ca)
  t.equal(code, 0, output)
  t.match(output, /database migrated/)
  t.ok(tlsSessions > before, 'over TLS')
})

t.test('verify-full refuses a certificate no trusted CA signed', async (t) => {
  const { code, message } = await migrate(urlFor('localhost', 'verify-full'))
  t.equal(code, 1)
  t.match(message, /^Cannot connect to the database at localhost:\d+\/\S+: unable to verify the first certificate$/)
})

t.test('verify-full refuses a certificate for another name', async (t) => {
  presented = contexts.anotherName
  t.teardown(() => { presented = contexts.localhost })
  const { code, message } = await migrate(urlFor('localhost', 'verify-full'), forAnotherName.ca)
  t.equal(code, 1)
  t.match(message, /Hostname\/IP does not match certificate's altnames: Host: localhost\. is not in the cert's altnames: DNS:db\.internal/)
})

t.test('require encrypts without checking the certificate; no sslmode asks for no TLS', async (t) => {
  const before = tlsSessions
  const encrypted = await migrate(urlFor('localhost', 'require'))
  t.equal(encrypted.code, 0, encrypted.output)
  t.ok(tlsSessions > before, 'over TLS, with an unknown CA')

  const plain = await migrate(urlFor('localhost'))
  t.equal(plain.code, 1)
  t.match(plain.message, /no pg_hba\.conf entry for host "127\.0\.0\.1", user "postgres", database "\S+", no encryption/, 'a server that requires TLS refuses the plain connection')
})
