import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { createId } from '@paralleldrive/cuid2'
import { createTestDatabase, uniqueQueuePrefix } from '@switchboard/testing/database'
import { deleteQueuePrefix } from '@switchboard/testing/redis'
import { testConfig, TEST_ADMIN } from '@switchboard/testing/config'
import type { Config } from '@switchboard/core/config'
import { buildServer } from '../src/build.ts'
import type { Teardown } from '@switchboard/testing/teardown'

export interface TestApp {
  app: FastifyInstance
  config: Config
  /** An admin token for the ADMIN_EMAIL user. */
  adminToken: string
  /** A fresh member with a token: tests never share users. */
  newMember: () => Promise<{ id: string, email: string, token: string }>
  request: (options: InjectOptions & { token?: string }) => Promise<LightMyRequestResponse>
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

  const login = async (email: string, password: string): Promise<string> => {
    const res = await request({ method: 'POST', url: '/api/auth/login', payload: { email, password } })
    if (res.statusCode !== 200) throw new Error(`login failed: ${res.body}`)
    return res.json().token
  }

  const adminToken = await login(TEST_ADMIN.email, TEST_ADMIN.password)

  const newMember: TestApp['newMember'] = async () => {
    const email = `member-${createId()}@example.com`
    const password = 'member-password'
    const res = await request({ method: 'POST', url: '/api/users', token: adminToken, payload: { email, password } })
    if (res.statusCode !== 201) throw new Error(`user creation failed: ${res.body}`)
    return { id: res.json().id, email, token: await login(email, password) }
  }

  return { app, config, adminToken, newMember, request }
}
