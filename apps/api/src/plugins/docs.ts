import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'

/** OpenAPI generated from the route schemas; the UI at /docs, the document at /docs/json. */
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
  await fastify.register(swaggerUi, { routePrefix: '/docs' })
}

export default fp(docs, { name: 'docs' })
