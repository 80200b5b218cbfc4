/**
 * The app behind a transaction-mode PgBouncer (docs/operations.md, PgBouncer): Debian's
 * /usr/sbin/pgbouncer (1.18, which `pnpm test` run as root installs: tests/get-debian-packages.sh)
 * in front of the test's own database, the roles of infra/k8s/components/pgbouncer/roles.sql,
 * and real api and worker processes through it with DATABASE_POOL_MODE=transaction, their
 * LISTENs and migration direct. Without the setting the same setup fails as the docs say.
 */
import { type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { createDatabase } from '@switchboard/core/db'
import { TEST_ADMIN } from '@switchboard/testing/config'
import { createTestClient, httpTransport } from '@switchboard/testing/client'
import { BASE_DATABASE_URL, createTestDatabase, type TestDatabase } from '@switchboard/testing/database'
import { entryArgs } from '@switchboard/testing/entries'
import { completeOneRun } from '@switchboard/testing/one-run'
import { freePort, spawnTied, startStack } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'

const PGBOUNCER = '/usr/sbin/pgbouncer'
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const ROLES_SQL = fileURLToPath(new URL('../../infra/k8s/components/pgbouncer/roles.sql', import.meta.url))

/** A database URL of the test server with another user, host port and database. */
function serverUrl (user: string, port: number, database: string): string {
  const url = new URL(BASE_DATABASE_URL)
  url.username = user
  url.password = ''
  url.port = String(port)
  url.pathname = `/${database}`
  return url.toString()
}

/**
 * roles.sql with the test's own role names (roles are the server's, shared by parallel test
 * files) and the test database's owner, run as the test server's admin.
 */
async function createRoles (database: TestDatabase, names: { api: string, worker: string }): Promise<() => Promise<void>> {
  const text = readFileSync(ROLES_SQL, 'utf8')
    .replaceAll('switchboard_api', names.api)
    .replaceAll('switchboard_worker', names.worker)
    .replaceAll('switchboard_owner', new URL(BASE_DATABASE_URL).username || 'postgres')
  const admin = createDatabase(database.url, { max: 1 })
  try {
    await admin.sql.unsafe(text)
  } finally {
    await admin.close()
  }
  return async () => {
    const server = createDatabase(BASE_DATABASE_URL, { max: 1 })
    try {
      await server.sql.unsafe(`drop role if exists "${names.api}", "${names.worker}"`)
    } finally {
      await server.close()
    }
  }
}

interface Pgbouncer { port: number, stop: () => Promise<void> }

/**
 * PgBouncer in transaction mode on a free loopback port, in front of `database` only, trusting
 * the given users (loopback). Startup parameters are not ignored: a client that sends
 * statement_timeout is refused, as docs/operations.md measured. It refuses to run as root: as
 * root it runs as nobody, dying with this process.
 */
async function startPgbouncer (t: Test, database: string, users: string[]): Promise<Pgbouncer> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-pgbouncer-'))
  chmodSync(dir, 0o755)
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const port = await freePort()
  const server = new URL(BASE_DATABASE_URL)
  writeFileSync(join(dir, 'userlist.txt'), users.map((user) => `"${user}" ""\n`).join(''))
  writeFileSync(join(dir, 'pgbouncer.ini'), [
    '[databases]',
    `${database} = host=${server.hostname} port=${server.port || 5432} dbname=${database}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${join(dir, 'userlist.txt')}`,
    'pool_mode = transaction',
    'default_pool_size = 4',
    'max_client_conn = 200',
    ''
  ].join('\n'))
  const ini = join(dir, 'pgbouncer.ini')
  const root = process.getuid?.() === 0
  // setpriv sets the death signal after it changed the user (a change clears an earlier one).
  const child: ChildProcess = root
    ? spawnTied('/usr/bin/setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', '--pdeathsig', 'KILL', '--', PGBOUNCER, ini], { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawnTied(PGBOUNCER, [ini], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = once(child, 'exit')
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGKILL')
    await exited
  }
  t.teardown(stop)
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}:\n${output}`)
    return output.includes('process up') ? true : undefined
  }, { what: 'pgbouncer to listen', timeoutMs: 10_000 })
  return { port, stop }
}

if (!existsSync(PGBOUNCER)) {
  t.plan(0, `${PGBOUNCER} is missing: install Debian's pgbouncer (as root: apt-get install -y pgbouncer; pnpm test run as root installs it itself)`)
} else {
  const database = await createTestDatabase()
  const suffix = randomBytes(4).toString('hex')
  const roles = { api: `switchboard_api_${suffix}`, worker: `switchboard_worker_${suffix}` }
  const dropRoles = await createRoles(database, roles)
  const pgbouncer = await startPgbouncer(t, database.name, [roles.api, roles.worker])
  const serverPort = Number(new URL(BASE_DATABASE_URL).port || 5432)
  const pooled = { api: serverUrl(roles.api, pgbouncer.port, database.name), worker: serverUrl(roles.worker, pgbouncer.port, database.name) }
  const direct = serverUrl(roles.api, serverPort, database.name)

  // Registered first, so that they run last: the stack drops the database, then the roles go.
  t.teardown(dropRoles)
  const stack = await startStack(t, {
    database,
    apis: 2,
    env: { DATABASE_URL: pooled.api, DATABASE_POOL_MODE: 'transaction', DATABASE_LISTEN_URL: direct, DATABASE_MIGRATION_URL: serverUrl(new URL(BASE_DATABASE_URL).username || 'postgres', serverPort, database.name) },
    workerEnv: { DATABASE_URL: pooled.worker, DATABASE_LISTEN_URL: '' }
  })

  t.test('login, a workflow, its run through the worker: SUCCESS, every statement through PgBouncer', async (t) => {
    const { runId } = await completeOneRun(stack.baseUrl, TEST_ADMIN)
    t.ok(runId, 'the run ended SUCCESS with its nodes\' outputs')
    t.notMatch(stack.apis.map((api) => api.output()).join('') + stack.workers[0]!.output(), /prepared statement|unsupported startup parameter/, 'no pooler error in the processes\' logs')
  })

  t.test('the migration, with the api\'s settings, goes straight to PostgreSQL (DATABASE_MIGRATION_URL)', async (t) => {
    const child = spawnTied(process.execPath, entryArgs('packages/core/src/bin/migrate.ts'), { cwd: ROOT, env: { ...process.env, ...stack.env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString() })
    child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString() })
    const [code] = await once(child, 'exit') as [number | null]
    t.equal(code, 0, output)
  })

  t.test('the api\'s role carries its statement limits through PgBouncer, the workers\' none', async (t) => {
    for (const [role, url, limit] of [['api', pooled.api, '30s'], ['worker', pooled.worker, '0']] as const) {
      const client = createDatabase(url, { max: 1, poolMode: 'transaction' })
      try {
        const [row] = await client.db.execute<{ statement: string, idle: string }>('select current_setting(\'statement_timeout\') as statement, current_setting(\'idle_in_transaction_session_timeout\') as idle')
        t.same(row, { statement: limit, idle: limit }, `${role}: ${limit}`)
      } finally {
        await client.close()
      }
    }
  })

  t.test('a deleted user\'s token is refused at once by the other api replica: its LISTEN goes direct', async (t) => {
    const admin = await stack.adminToken()
    const member = await stack.client.newUser(admin)
    const second = createTestClient(httpTransport(stack.apis[1]!.baseUrl))
    t.equal((await second.call('GET', '/api/automation/workflows', { token: member.token })).status, 200, 'the second replica read and cached the user')
    t.equal((await stack.call('DELETE', `/api/users/${member.id}`, { token: admin })).status, 204, 'deleted through the first')
    const deletedAt = Date.now()
    await waitFor(async () => (await second.call('GET', '/api/automation/workflows', { token: member.token })).status === 401 ? true : undefined,
      { what: 'the second replica to refuse the token', timeoutMs: 2000, intervalMs: 20 })
    t.ok(Date.now() - deletedAt < 2000, `refused after ${Date.now() - deletedAt} ms, before the cached role's 5 s`)
  })

  t.test('without DATABASE_POOL_MODE=transaction the same setup fails as docs/operations.md says', async (t) => {
    t.test('the api\'s connections are refused for their startup parameters: it cannot even start', async (t) => {
      await t.rejects(stack.startApi({ DATABASE_POOL_MODE: '' }), /unsupported startup parameter: statement_timeout/)
    })

    t.test('a LISTEN through the pooler hears nothing', async (t) => {
      const client = createDatabase(pooled.api, { max: 1, poolMode: 'transaction' })
      t.teardown(client.close)
      const heard: string[] = []
      await client.listener.listen('switchboard_pooled_listen', (payload) => { heard.push(payload) })
      await client.db.execute('select pg_notify(\'switchboard_pooled_listen\', \'hello\')')
      await new Promise((resolve) => setTimeout(resolve, 500))
      t.same(heard, [], 'no notification reached the listener')
    })
  })
}
