import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { brotliCompressSync, gzipSync } from 'node:zlib'
import Fastify from 'fastify'
import t from 'tap'
import consoleApp from '../src/plugins/console.ts'

/** A build as vite lays it out: index.html, hashed assets, and their pre-compressed twins. */
const INDEX = '<!doctype html><html><head><script type="module" src="/console/assets/index-Ab12Cd.js"></script></head><body><div id="app"></div></body></html>'
const SCRIPT = 'console.log("the console")'

const root = await mkdtemp(join(tmpdir(), 'switchboard-console-'))
t.teardown(async () => { await rm(root, { recursive: true, force: true }) })
await mkdir(join(root, 'assets'))
await writeFile(join(root, 'index.html'), INDEX)
await writeFile(join(root, 'index.html.br'), brotliCompressSync(INDEX))
await writeFile(join(root, 'assets', 'index-Ab12Cd.js'), SCRIPT)
await writeFile(join(root, 'assets', 'index-Ab12Cd.js.gz'), gzipSync(SCRIPT))

const app = Fastify({ logger: false })
await app.register(consoleApp, { root })
t.teardown(async () => { await app.close() })

const get = async (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers })

t.test('/console and every path under it answer the app, revalidated at each load, with a strict CSP', async (t) => {
  for (const url of ['/console', '/console/', '/console/workflows/abc', '/console/runs?status=FAILED', '/console/index.html']) {
    const res = await get(url)
    t.equal(res.statusCode, 200, url)
    t.match(res.headers['content-type'], /^text\/html/, url)
    t.equal(res.body, INDEX, url)
    t.equal(res.headers['cache-control'], 'no-cache', `${url}: index.html is never cached without a check`)
    t.match(res.headers['content-security-policy'], /default-src 'none'; script-src 'self'; style-src 'self'/, url)
    t.match(res.headers['content-security-policy'], /frame-ancestors 'none'/, url)
    t.equal(res.headers['x-content-type-options'], 'nosniff')
    t.equal(res.headers['referrer-policy'], 'no-referrer')
  }
})

t.test('hashed assets are immutable for a year and sent pre-compressed when the browser accepts it', async (t) => {
  const plain = await get('/console/assets/index-Ab12Cd.js')
  t.equal(plain.statusCode, 200)
  t.match(plain.headers['content-type'], /javascript/)
  t.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable')
  t.equal(plain.body, SCRIPT)
  t.match(plain.headers['content-security-policy'], /script-src 'self'/)

  const gzipped = await get('/console/assets/index-Ab12Cd.js', { 'accept-encoding': 'gzip' })
  t.equal(gzipped.headers['content-encoding'], 'gzip')
  t.match(gzipped.headers['content-type'], /javascript/)
  t.equal(gzipped.headers['cache-control'], 'public, max-age=31536000, immutable')
  t.match(gzipped.headers.vary, /accept-encoding/i)

  const brotli = await get('/console/', { 'accept-encoding': 'br, gzip' })
  t.equal(brotli.headers['content-encoding'], 'br')
  t.equal(brotli.headers['cache-control'], 'no-cache')
})

t.test('a missing hashed asset is a 404, never the app\'s HTML; the compressed twins are not addressable', async (t) => {
  for (const url of ['/console/assets/index-Old000.js', '/console/assets/index-Ab12Cd.js.gz', '/console/index.html.br']) {
    const res = await get(url)
    t.equal(res.statusCode, url.startsWith('/console/assets/') ? 404 : 200, url)
    t.not(res.headers['content-encoding'], 'gzip', url)
    if (res.statusCode === 200) t.equal(res.body, INDEX, `${url}: the app, as any other path`)
  }
})

t.test('without a build, /console answers 503 saying how to build it', async (t) => {
  const empty = await mkdtemp(join(tmpdir(), 'switchboard-console-empty-'))
  t.teardown(async () => { await rm(empty, { recursive: true, force: true }) })
  const bare = Fastify({ logger: false })
  await bare.register(consoleApp, { root: empty })
  t.teardown(async () => { await bare.close() })
  for (const url of ['/console', '/console/runs']) {
    const res = await bare.inject({ method: 'GET', url })
    t.equal(res.statusCode, 503, url)
    t.match(res.json(), { statusCode: 503, code: 'CONSOLE_NOT_BUILT', message: 'The console is not built: run pnpm build' })
  }
})
