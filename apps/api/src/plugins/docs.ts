import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { BROWSER_PAGE_HEADERS } from '../security-headers.ts'

/**
 * OpenAPI generated from the route schemas; the UI at /docs, the document at /docs/json.
 * The UI is served on the console's origin, where the console keeps its token: it gets the
 * console's headers (CSP: its own files only), in a context of its own so that they stay on /docs.
 */
async function docs (fastify: FastifyInstance): Promise<void> {
  await fastify.register(swagger, {
    openapi: {
      info: { title: 'Switchboard', version: '0.1.0', description: 'Workflow automation and chat messaging' },
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } }
      },
      security: [{ bearerAuth: [] }]
    }
  })
  await fastify.register(async (reference) => {
    reference.addHook('onSend', async (_request, reply) => { reply.headers(BROWSER_PAGE_HEADERS) })
    await reference.register(swaggerUi, { routePrefix: '/docs' })
  })
}

export default fp(docs, { name: 'docs' })
