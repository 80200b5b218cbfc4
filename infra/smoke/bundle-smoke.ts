/**
 * The production bundles boot: builds them exactly as infra/Dockerfile does
 * (`pnpm deploy --legacy --prod` after `pnpm build`), lays them out as the image
 * does (/app/api, /app/worker), runs the migration from the bundle, starts the
 * api and the worker from it with plain node in production mode against the
 * local Postgres and Redis, and takes one workflow run through them. Does so with
 * each Node given as `--node <path>` (CI: this machine's Node 20 for development
 * and Node 22, the image's), by default the Node running it. Each boot uses a
 * database and a queue prefix of its own and removes them and the processes at
 * the end, the bundles once all are done. Exits non-zero, saying which step
 * failed, otherwise.
 *
 * Run after `pnpm build`: node --import tsx infra/smoke/bundle-smoke.ts [--node <path>]…
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { IMAGE_COMMANDS } from '@switchboard/testing/image'
import { BASE_DATABASE_URL, dropDatabase, REDIS_URL } from '@switchboard/testing/database'
import { completeOneRun } from '@switchboard/testing/one-run'
import { freePort } from '@switchboard/testing/processes'
import { waitFor } from '@switchboard/testing/wait'
import { deleteQueuePrefix } from '@switchboard/testing/redis'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
/** The deploys (about 30 s here), then each boot (about 10 s). */
const DEADLINE_MS = 300_000

const { values: { node: nodes = [process.execPath] } } = parseArgs({ options: { node: { type: 'string', multiple: true } } })

const started = Date.now()
const seconds = (): string => `${((Date.now() - started) / 1000).toFixed(1)}s`
const say = (line: string): void => { process.stdout.write(`bundle smoke [${seconds()}]: ${line}\n`) }

async function run (command: string, args: string[], options: { cwd: string, env?: NodeJS.ProcessEnv }): Promise<string> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const [code] = await once(child, 'exit') as [number | null]
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output}`)
  return output
}

interface Service { name: string, child: ChildProcess, output: () => string }

/** Runs one of the image's commands with the given node. */
function startService (node: string, name: keyof typeof IMAGE_COMMANDS, cwd: string, env: NodeJS.ProcessEnv): Service {
  const [, ...args] = IMAGE_COMMANDS[name]
  const child = spawn(node, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  return { name, child, output: () => output }
}

async function stopService (service: Service): Promise<void> {
  const { child } = service
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  await exited
  clearTimeout(timer)
}

function alive (service: Service): void {
  if (service.child.exitCode !== null || service.child.signalCode !== null) {
    throw new Error(`${service.name} exited with ${service.child.exitCode ?? service.child.signalCode}:\n${service.output()}`)
  }
}

async function answers (url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2_000) })).ok
  } catch {
    return false
  }
}

/** The api bundle carries the built console (apps/console, a dependency of the api) and serves it. */
async function consoleServed (baseUrl: string): Promise<void> {
  const page = await fetch(`${baseUrl}/console/`, { signal: AbortSignal.timeout(5_000) })
  const html = await page.text()
  const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1]
  if (page.status !== 200 || script === undefined) throw new Error(`GET /console/ answered ${page.status} without the app's script:\n${html.slice(0, 500)}`)
  if (page.headers.get('content-security-policy')?.includes("default-src 'none'") !== true) throw new Error('GET /console/ has no Content-Security-Policy')
  const asset = await fetch(`${baseUrl}${script}`, { signal: AbortSignal.timeout(5_000) })
  await asset.arrayBuffer()
  if (asset.status !== 200 || asset.headers.get('cache-control')?.includes('immutable') !== true) {
    throw new Error(`GET ${script} answered ${asset.status} (cache-control: ${asset.headers.get('cache-control')})`)
  }
}

const bundles = await mkdtemp(join(tmpdir(), 'switchboard-bundles-'))
const services: Service[] = []
const stores: Array<{ databaseName: string, queuePrefix: string }> = []

async function cleanUp (): Promise<void> {
  await Promise.all(services.map(stopService))
  for (const { databaseName, queuePrefix } of stores) {
    await dropDatabase(databaseName)
    await deleteQueuePrefix(queuePrefix)
  }
  await rm(bundles, { recursive: true, force: true })
}

/** Migrates, boots and runs through the bundles with one node, on stores of its own. */
async function bootOn (node: string): Promise<void> {
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()
  const id = randomBytes(6).toString('hex')
  const databaseName = `switchboard_smoke_${id}`
  const databaseUrl = new URL(BASE_DATABASE_URL)
  databaseUrl.pathname = `/${databaseName}`
  const queuePrefix = `sbsmoke-${id}`
  stores.push({ databaseName, queuePrefix })
  const admin = { email: 'admin@example.com', password: randomBytes(12).toString('base64url') }

  // What the container sees: production mode, no source conditions, nothing from this shell but PATH.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl.toString(),
    REDIS_URL,
    QUEUE_PREFIX: queuePrefix,
    JWT_SECRET: randomBytes(48).toString('base64url'),
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    ADMIN_EMAIL: admin.email,
    ADMIN_PASSWORD: admin.password,
    CHAT_APP_SECRET: randomBytes(16).toString('hex'),
    CHAT_VERIFY_TOKEN: randomBytes(16).toString('hex'),
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    WORKER_HTTP_PORT: String(await freePort()),
    API_METRICS_PORT: String(await freePort()),
    LOG_LEVEL: 'info'
  }

  await run(node, IMAGE_COMMANDS.migrate.slice(1), { cwd: bundles, env })
  say(`node ${version}: migrated ${databaseName} from the bundle (the database was created by the migration)`)

  const api = startService(node, 'api', bundles, env)
  const worker = startService(node, 'worker', bundles, env)
  const booted = [api, worker]
  services.push(...booted)
  const baseUrl = `http://127.0.0.1:${env.PORT}`
  await waitFor(async () => {
    alive(api)
    alive(worker)
    return (await answers(`${baseUrl}/health/ready`)) && (await answers(`http://127.0.0.1:${env.WORKER_HTTP_PORT}/health/ready`)) ? true : undefined
  }, { timeoutMs: 30_000, intervalMs: 100, what: 'the api and the worker to be ready' })
  say(`node ${version}: api and worker started from the bundles and ready (the worker on its own listener)`)

  const publicMetrics = await fetch(`${baseUrl}/metrics`)
  const metrics = await fetch(`http://127.0.0.1:${env.API_METRICS_PORT}/metrics`)
  if (publicMetrics.status !== 404 || metrics.status !== 200) throw new Error(`/metrics answered ${publicMetrics.status} on the public port and ${metrics.status} on the metrics listener (expected 404 and 200)`)
  say(`node ${version}: the api's metrics are on their own listener, not on the public port`)

  await consoleServed(baseUrl)
  say(`node ${version}: the console is served from the api bundle at /console (its assets immutable, under a Content-Security-Policy)`)

  const { runId } = await completeOneRun(baseUrl, admin)
  say(`node ${version}: login, create, fire: run ${runId} SUCCESS`)

  await Promise.all(booted.map(stopService))
  for (const service of booted) {
    if (service.child.exitCode !== 0) throw new Error(`${service.name} did not stop cleanly on SIGTERM (${service.child.exitCode ?? service.child.signalCode}):\n${service.output()}`)
  }
  say(`node ${version}: api and worker stopped cleanly on SIGTERM`)
}

const deadline = setTimeout(() => {
  process.stderr.write(`bundle smoke: FAILED: not done within ${DEADLINE_MS / 1000}s\n`)
  for (const service of services) service.child.kill('SIGKILL')
  process.exit(1)
}, DEADLINE_MS)

try {
  for (const built of ['apps/api/dist/server.js', 'apps/worker/dist/main.js', 'packages/core/dist/bin/migrate.js', 'apps/console/dist/index.html']) {
    if (!existsSync(join(ROOT, built))) throw new Error(`${built} is missing: run \`pnpm build\` first`)
  }
  // One at a time: two deploys share pnpm's store and the machine's two cores.
  for (const app of ['api', 'worker']) {
    await run('npx', ['-y', 'pnpm@10', 'deploy', '--legacy', '--filter', `@switchboard/${app}`, '--prod', join(bundles, app)], { cwd: ROOT })
  }
  say(`bundles deployed to ${bundles}`)
  for (const node of nodes) await bootOn(node)
  await cleanUp()
  say('passed')
} catch (err) {
  process.stderr.write(`bundle smoke: FAILED: ${err instanceof Error ? err.message : String(err)}\n`)
  for (const service of services) process.stderr.write(`--- ${service.name} output ---\n${service.output()}\n`)
  await cleanUp().catch((cleanUpErr: unknown) => { process.stderr.write(`bundle smoke: clean-up failed: ${String(cleanUpErr)}\n`) })
  process.exitCode = 1
} finally {
  clearTimeout(deadline)
}
