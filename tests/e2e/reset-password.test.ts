/**
 * `pnpm users:reset-password <email>`, for when nobody can sign in: run here as its own
 * process, with the command line of the root package.json's script, against the database of
 * a running api. It sets the password (generated and printed once, or read from stdin with
 * --password-stdin), ends the user's earlier tokens on the running api through the same
 * announcement the routes use, and fails with one line and exit code 1 (78 for a bad configuration,
 * as every entry point).
 */
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { TEST_ADMIN } from '@switchboard/testing/config'
import { spawnTied } from '@switchboard/testing/processes'
import { buildTestApp } from '../../apps/api/test/helper.ts'
import { ROLE_CACHE_TTL_MS } from '../../apps/api/src/plugins/auth.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const script = (JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { scripts: Record<string, string> }).scripts['users:reset-password']!
const [command, ...scriptArgs] = script.split(' ')

const { app, request, adminToken, config } = await buildTestApp(t)

interface Outcome { code: number | null, stdout: string, stderr: string }

/** The script's command line with `args`, `stdin` written to it (then closed), against the test's database. */
async function resetPassword (args: string[], stdin = '', env: Record<string, string> = {}): Promise<Outcome> {
  const child = spawnTied(command!, [...scriptArgs, ...args], { cwd: ROOT, env: { ...process.env, DATABASE_URL: config.databaseUrl, ...env }, stdio: 'pipe' })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  child.stdin!.end(stdin)
  const [code] = await once(child, 'exit') as [number | null]
  return { code, stdout, stderr }
}

const status = async (token: string): Promise<number> => (await request({ method: 'GET', url: '/api/users', token })).statusCode
const login = async (password: string): Promise<number> =>
  (await request({ method: 'POST', url: '/api/auth/login', payload: { email: TEST_ADMIN.email, password } })).statusCode

/** Polls until the running api refuses the token; the announcement makes it at once, the cache's TTL bounds it. */
async function refusedWithin (token: string, ms: number): Promise<number> {
  const started = Date.now()
  while (await status(token) !== 401) {
    if (Date.now() - started > ms) throw new Error(`the token still worked after ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return Date.now() - started
}

t.test('without --password-stdin a password is generated, printed once, and the earlier tokens end', async (t) => {
  t.equal(await status(adminToken), 200)
  const { code, stdout, stderr } = await resetPassword([TEST_ADMIN.email.toUpperCase()])
  t.equal(code, 0, stderr)
  const match = /^Password of admin@example\.com reset; every token issued before is ended\. New password \(shown once\): ([A-Za-z0-9_-]{24})\n$/.exec(stdout)
  t.ok(match, stdout)
  t.ok(await refusedWithin(adminToken, ROLE_CACHE_TTL_MS) < ROLE_CACHE_TTL_MS, 'the running api refuses the earlier token before its cached answer expires')
  t.equal(await login(TEST_ADMIN.password), 401, 'the old password no longer signs in')
  t.equal(await login(match![1]!), 200, 'the printed one does')
})

t.test('with --password-stdin the password is read from stdin, without its final newline', async (t) => {
  const { code, stdout, stderr } = await resetPassword([TEST_ADMIN.email, '--password-stdin'], 'chosen by the operator\n')
  t.equal(code, 0, stderr)
  t.equal(stdout, 'Password of admin@example.com reset; every token issued before is ended\n', 'the password is not echoed')
  t.equal(await login('chosen by the operator'), 200)
})

t.test('failures are one line on stderr and exit code 1, and change nothing', async (t) => {
  const [{ token_version: before }] = await app.database.sql<Array<{ token_version: number }>>`select token_version from users where email = ${TEST_ADMIN.email}`
  const cases: Array<[args: string[], stdin: string, message: string]> = [
    [['ghost@example.com'], '', 'no user has the email ghost@example.com'],
    [[], '', 'usage: pnpm users:reset-password <email> [--password-stdin]'],
    [[TEST_ADMIN.email, 'second@example.com'], '', 'usage: pnpm users:reset-password <email> [--password-stdin]'],
    [[TEST_ADMIN.email, '--password-stdin'], 'short\n', 'the password on stdin must be 8 to 1024 characters'],
    [[TEST_ADMIN.email, '--password-stdin'], 'x'.repeat(1025), 'the password on stdin must be 8 to 1024 characters']
  ]
  for (const [args, stdin, message] of cases) {
    const { code, stdout, stderr } = await resetPassword(args, stdin)
    t.equal(code, 1, args.join(' '))
    t.equal(stderr, `users:reset-password: ${message}\n`)
    t.equal(stdout, '')
  }
  const misconfigured = await resetPassword([TEST_ADMIN.email], '', { NODE_ENV: 'production', JWT_SECRET: '', ENCRYPTION_KEY: '' })
  t.equal(misconfigured.code, 78, 'a bad configuration exits 78, as every entry point')
  const line = JSON.parse(misconfigured.stdout) as { level: number, name: string, settings: string[] }
  t.match(line, { level: 60, name: 'reset-password' })
  t.ok(line.settings.includes('JWT_SECRET') && line.settings.includes('ENCRYPTION_KEY'), 'naming every bad setting')

  const [{ token_version: after }] = await app.database.sql<Array<{ token_version: number }>>`select token_version from users where email = ${TEST_ADMIN.email}`
  t.equal(after, before, 'no token was ended')
  t.equal(await login('chosen by the operator'), 200, 'the password is unchanged')
})
