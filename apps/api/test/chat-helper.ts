import { createLogger, type Logger } from '@switchboard/core/logger'
import {
  FAKE_ACCESS_TOKEN, messagesDelivery, signedDelivery, startFakeChatPlatform, statusesDelivery,
  type FakeChatPlatform, type FakeChatPlatformOptions, type InboundMessageSpec, type StatusSpec
} from '@switchboard/testing/fake-chat-platform'
import { waitFor } from '@switchboard/testing/wait'
import { startWorker, type RunningWorker } from '@switchboard/worker/worker'
import { buildTestApp, type TestApp } from './helper.ts'
import type { Teardown } from '@switchboard/testing/teardown'

export const DEFAULT_PHONE_NUMBER_ID = '106540352242922'
export const DEFAULT_BUSINESS_ACCOUNT_ID = '102290129340398'
export const APP_SECRET = 'chat-app-secret-for-tests'
export const VERIFY_TOKEN = 'chat-verify-token'

interface ChatTestApp extends TestApp {
  fake: FakeChatPlatform
  worker?: RunningWorker
  /** POSTs a signed delivery to /webhook/chat and, with a worker, waits until it has been processed. */
  deliver: (payload: unknown) => Promise<void>
  /** Waits until every stored delivery has been processed (deliveries the fake platform posted itself). */
  deliveriesProcessed: () => Promise<void>
  /** Inbound text messages to a platform number (the default account's unless given). */
  receive: (specs: InboundMessageSpec[], phoneNumberId?: string) => Promise<void>
  statuses: (specs: StatusSpec[], phoneNumberId?: string) => Promise<void>
  /** Links a chat account for a user through the API; returns its id. */
  linkAccount: (token: string, phoneNumberId: string, extra?: Record<string, unknown>) => Promise<string>
}

/**
 * The API against a fake chat platform, with the installation's default
 * account configured; `worker: true` also runs the worker in-process so that
 * webhook deliveries (and the runs they start) are processed.
 */
export async function buildChatTestApp (t: Teardown, options: { worker?: boolean, workerLogger?: Logger, fake?: FakeChatPlatformOptions, env?: Record<string, string> } = {}): Promise<ChatTestApp> {
  const fake = await startFakeChatPlatform(options.fake)
  t.teardown(async () => { await fake.close() })
  const testApp = await buildTestApp(t, {
    CHAT_API_URL: fake.url,
    CHAT_ACCESS_TOKEN: FAKE_ACCESS_TOKEN,
    CHAT_PHONE_NUMBER_ID: DEFAULT_PHONE_NUMBER_ID,
    CHAT_BUSINESS_ACCOUNT_ID: DEFAULT_BUSINESS_ACCOUNT_ID,
    CHAT_APP_SECRET: APP_SECRET,
    CHAT_VERIFY_TOKEN: VERIFY_TOKEN,
    ...options.env
  })
  const { config, app, request } = testApp

  let worker: RunningWorker | undefined
  if (options.worker === true) {
    worker = await startWorker(config, options.workerLogger ?? createLogger(process.env.TEST_WORKER_LOG_LEVEL ?? 'silent', 'worker'))
  }
  // Teardowns run last-in first-out: the worker stops before the app's own teardown drops the database.
  t.teardown(async () => { await worker?.close() })

  const deliveriesProcessed: ChatTestApp['deliveriesProcessed'] = async () => {
    await waitFor(async () => {
      const [row] = await app.database.sql<Array<{ pending: number }>>`select count(*)::int as pending from chat_deliveries`
      return row.pending === 0 ? true : undefined
    }, { what: 'chat deliveries to be processed', intervalMs: 25 })
  }

  const deliver: ChatTestApp['deliver'] = async (payload) => {
    const { body, headers } = signedDelivery(payload, APP_SECRET)
    const res = await app.inject({ method: 'POST', url: '/webhook/chat', payload: body, headers })
    if (res.statusCode !== 200) throw new Error(`delivery refused: ${res.statusCode} ${res.body}`)
    if (worker !== undefined) await deliveriesProcessed()
  }

  const linkAccount: ChatTestApp['linkAccount'] = async (token, phoneNumberId, extra = {}) => {
    const res = await request({
      method: 'POST',
      url: '/api/chat/accounts',
      token,
      payload: { name: `Account ${phoneNumberId}`, phoneNumberId, accessToken: FAKE_ACCESS_TOKEN, ...extra }
    })
    if (res.statusCode !== 201) throw new Error(`account link failed: ${res.body}`)
    return res.json().id
  }

  return {
    ...testApp,
    fake,
    worker,
    deliver,
    deliveriesProcessed,
    receive: async (specs, phoneNumberId = DEFAULT_PHONE_NUMBER_ID) => { await deliver(messagesDelivery(phoneNumberId, specs)) },
    statuses: async (specs, phoneNumberId = DEFAULT_PHONE_NUMBER_ID) => { await deliver(statusesDelivery(phoneNumberId, specs)) },
    linkAccount
  }
}
