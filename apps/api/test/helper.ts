import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { createTestDatabase, uniqueQueuePrefix } from '@switchboard/testing/database'
import { deleteQueuePrefix } from '@switchboard/testing/redis'
import { testConfig, TEST_ADMIN } from '@switchboard/testing/config'
import { createTestClient, injectTransport, type TestClient, type TestUser } from '@switchboard/testing/client'
import type { Config } from '@switchboard/core/config'
import { buildServer } from '../src/build.ts'
import type { Teardown } from '@switchboard/testing/teardown'

export interface TestApp {
  app: FastifyInstance
  config: Config
  /** An admin token for the ADMIN_EMAIL user. */
  adminToken: string
  /** A fresh member with a token: tests never share users. */
  newMember: () => Promise<TestUser>
  /** The test client on `inject`. */
  client: TestClient
  request: (options: InjectOptions & { token?: string }) => Promise<LightMyRequestResponse>
  /** The exposition text of the api's metrics listener (API_METRICS_PORT, any free port here). */
  scrape: () => Promise<string>
}

/** The API in-process on a database and queue prefix of its own, for `inject` tests. */
export async function buildTestApp (t: Teardown, env: Record<string, string> = {}): Promise<TestApp> {
  const database = await createTestDatabase()
  const config = testConfig(database.url, uniqueQueuePrefix(), env)
  const app = await buildServer({ config, logger: false })
  await app.ready()
  t.teardown(async () => {
    await app.close()
    await deleteQueuePrefix(config.queuePrefix)
    await database.drop()
  })

  const request: TestApp['request'] = async ({ token, headers, ...options }) => app.inject({
    ...options,
    headers: { ...headers, ...(token !== undefined && { authorization: `Bearer ${token}` }) }
  })

  const client = createTestClient(injectTransport(app))
  const adminToken = await client.login(TEST_ADMIN)

  const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${app.metricsListener.port}/metrics`)).text()

  return { app, config, adminToken, newMember: async () => client.newUser(adminToken), client, request, scrape }
}
