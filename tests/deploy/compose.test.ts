/**
 * infra/compose.yaml (no container engine here: the file is read, not run): the whole
 * stack from one image, every secret required, and what compose-secrets.sh generates
 * is accepted by the production configuration.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { parse } from 'yaml'
import { loadConfig } from '@switchboard/core/config'
import { IMAGE_COMMANDS } from '@switchboard/testing/image'

const infra = (file: string): string => fileURLToPath(new URL(`../../infra/${file}`, import.meta.url))
const compose = parse(readFileSync(infra('compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, any>, volumes: Record<string, unknown> }
const { services } = compose
const apps = ['migrate', 'api', 'worker']

t.test('one image, built once, run as migrate, api and worker', async (t) => {
  t.same(Object.keys(services).sort(), ['api', 'migrate', 'postgres', 'prometheus', 'redis', 'worker'])
  const built = Object.entries(services).filter(([, service]) => service.build !== undefined).map(([name]) => name)
  t.same(built, ['migrate'], 'only migrate builds')
  t.same(services.migrate.build, { context: '..', dockerfile: 'infra/Dockerfile' })
  t.equal(new Set(apps.map((name) => services[name].image)).size, 1, 'the three use one image')
  t.match(services.api.image, /^switchboard:\$\{SWITCHBOARD_VERSION:-\d+\.\d+\.\d+\}$/, 'a version tag, not latest')
  for (const name of ['api', 'worker']) t.equal(services[name].pull_policy, 'never', `${name} never pulls the image migrate builds`)
  for (const name of apps) t.same(services[name].command, IMAGE_COMMANDS[name as keyof typeof IMAGE_COMMANDS], `${name} runs the image's ${name} command`)
  const { packageManager } = JSON.parse(readFileSync(infra('../package.json'), 'utf8')) as { packageManager: string }
  const installs = [...readFileSync(infra('Dockerfile'), 'utf8').matchAll(/npm install -g (pnpm@\S+)/g)].map((match) => match[1])
  t.same(installs, [packageManager], `the image installs the pnpm of packageManager (${packageManager}), pinned`)
})

t.test('published api, a data volume, healthchecks, restart policies and start order', async (t) => {
  t.same(services.api.ports, ['$' + '{API_PORT:-3000}:3000'], 'published on API_PORT (default 3000)')
  t.same(services.postgres.volumes, ['postgres-data:/var/lib/postgresql/data'])
  t.ok('postgres-data' in compose.volumes)
  for (const name of ['postgres', 'redis', 'api', 'worker']) {
    t.ok(services[name].healthcheck?.test, `${name} has a healthcheck`)
    t.equal(services[name].restart, 'unless-stopped', `${name} restarts`)
  }
  t.equal(services.migrate.restart, 'no', 'the migration runs once')
  t.match(services.worker.healthcheck.test.join(' '), /127\.0\.0\.1:3001\/health\/ready/, 'the worker is checked on its own listener')
  for (const name of ['api', 'worker']) {
    t.same(services[name].depends_on.migrate, { condition: 'service_completed_successfully' }, `${name} starts after the migration`)
  }
  t.same(services.migrate.depends_on.postgres, { condition: 'service_healthy' })
})

t.test('the optional Prometheus scrapes both metrics listeners, which are not published', async (t) => {
  const defaults = loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'switchboard-compose-')) })
  const prometheus = parse(readFileSync(infra('prometheus/prometheus.yaml'), 'utf8')) as { rule_files: string[], scrape_configs: Array<{ job_name: string, static_configs: Array<{ targets: string[] }> }> }
  const targets = Object.fromEntries(prometheus.scrape_configs.map((job) => [job.job_name, job.static_configs.flatMap((config) => config.targets)]))
  t.same(targets, {
    'switchboard-api': [`api:${defaults.apiMetricsPort}`],
    'switchboard-worker': [`worker:${defaults.workerHttpPort}`]
  }, 'the jobs the alerts expect, on the apps\' metrics ports')
  t.not(defaults.apiMetricsPort, defaults.port, 'the api\'s metrics are not on its published port')
  t.same(services.prometheus.profiles, ['monitoring'], 'only when asked for')
  t.same(services.prometheus.volumes, ['./prometheus/prometheus.yaml:/etc/prometheus/prometheus.yml:ro', './prometheus/alerts.yaml:/etc/prometheus/alerts.yaml:ro'])
  t.same(prometheus.rule_files, ['/etc/prometheus/alerts.yaml'], 'with the alerts')
  t.match(services.prometheus.ports, [/^127\.0\.0\.1:/], 'its UI on loopback only')
})

t.test('every secret is required from the environment, none is written in the file', async (t) => {
  const env = services.api.environment as Record<string, string>
  for (const name of ['JWT_SECRET', 'ENCRYPTION_KEY', 'ADMIN_PASSWORD', 'CHAT_APP_SECRET']) {
    t.match(env[name], new RegExp(`^\\$\\{${name}:\\?set ${name} `), `${name} is required`)
  }
  t.match(env.DATABASE_URL, /^postgres:\/\/switchboard:\$\{POSTGRES_PASSWORD:\?set POSTGRES_PASSWORD /)
  t.match(services.postgres.environment.POSTGRES_PASSWORD, /^\$\{POSTGRES_PASSWORD:\?/)
  t.equal(services.postgres.environment.POSTGRES_HOST_AUTH_METHOD, undefined, 'the database asks for its password')
  t.equal(env.NODE_ENV, 'production')
})

t.test('the generated secrets pass the production checks', async (t) => {
  const generated = Object.fromEntries(execFileSync(infra('compose-secrets.sh'), { encoding: 'utf8' }).trim().split('\n').map((line) => {
    const at = line.indexOf('=')
    return [line.slice(0, at), line.slice(at + 1)]
  }))
  t.same(Object.keys(generated).sort(), ['ADMIN_PASSWORD', 'CHAT_APP_SECRET', 'CHAT_VERIFY_TOKEN', 'ENCRYPTION_KEY', 'JWT_SECRET', 'POSTGRES_PASSWORD'])
  const config = loadConfig({ ...generated, NODE_ENV: 'production', DATABASE_URL: `postgres://switchboard:${generated.POSTGRES_PASSWORD}@postgres:5432/switchboard` })
  t.equal(config.encryptionKey.length, 32)
  t.equal(config.chat.appSecret, generated.CHAT_APP_SECRET)
})
