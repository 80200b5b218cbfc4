import { existsSync } from 'node:fs'
import { join, sep } from 'node:path'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyStatic from '@fastify/static'
import { consoleRoot } from '@switchboard/console'
import { BROWSER_PAGE_HEADERS } from '../security-headers.ts'

export interface ConsoleOptions {
  /** The built console (default: the @switchboard/console package's `dist/`). */
  root?: string
}

const PREFIX = '/console'

/** Vite names every file under assets/ by its content hash: a new build has new names. */
const HASHED_ASSETS = `${sep}assets${sep}`
const IMMUTABLE = 'public, max-age=31536000, immutable'
/** index.html (and anything unhashed) is revalidated each time, so a deploy is seen at the next load. */
const REVALIDATE = 'no-cache'

/**
 * The admin console (apps/console), a single-page app, at /console: its files with
 * @fastify/static (pre-compressed .br/.gz chosen by Accept-Encoding), index.html for every
 * other /console path so that deep links load the app, and a strict Content-Security-Policy.
 * Not wrapped with fastify-plugin: its hook stays on its own routes.
 */
export default async function consoleApp (fastify: FastifyInstance, opts: ConsoleOptions): Promise<void> {
  const root = opts.root ?? consoleRoot
  fastify.addHook('onSend', async (_request, reply) => { reply.headers(BROWSER_PAGE_HEADERS) })

  if (!existsSync(join(root, 'index.html'))) {
    // Development without `pnpm build`; the production bundle always carries the build.
    fastify.log.warn({ root }, 'the console is not built: /console answers 503 until `pnpm build` runs')
    const notBuilt = async (_request: FastifyRequest, reply: FastifyReply) => reply.code(503).send({
      statusCode: 503, code: 'CONSOLE_NOT_BUILT', error: 'Console not built', message: 'The console is not built: run pnpm build'
    })
    fastify.get(PREFIX, { schema: { hide: true } }, notBuilt)
    fastify.get(`${PREFIX}/*`, { schema: { hide: true } }, notBuilt)
    return
  }

  await fastify.register(fastifyStatic, {
    root,
    prefix: `${PREFIX}/`,
    // One route per file, listed once at start (the build does not change while the api runs).
    wildcard: false,
    index: false,
    globIgnore: ['**/*.br', '**/*.gz'],
    preCompressed: true,
    cacheControl: false,
    setHeaders: (reply: FastifyReply, path: string) => {
      reply.header('cache-control', path.includes(HASHED_ASSETS) ? IMMUTABLE : REVALIDATE)
    }
  })

  const app = async (request: FastifyRequest, reply: FastifyReply) => {
    // A hashed file that is not there (an old tab after a deploy) is a 404, not the app's HTML.
    if (request.url.startsWith(`${PREFIX}/assets/`)) return reply.callNotFound()
    return reply.sendFile('index.html')
  }
  fastify.get(PREFIX, { schema: { hide: true } }, app)
  fastify.get(`${PREFIX}/*`, { schema: { hide: true } }, app)
}
