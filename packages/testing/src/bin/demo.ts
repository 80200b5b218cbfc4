import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { FAKE_ACCESS_TOKEN, startFakeChatPlatform } from '../fake-chat-platform.ts'
import { fakeModelEnv, startFakeModelProvider } from '../fake-model-provider.ts'

/**
 * Demo mode (`pnpm start:demo`): the fake chat platform and the fake model provider, then
 * `pnpm start` with the default chat account and the assistant pointed at them, so that the
 * whole product can be tried without a platform account or a model key: a customer message
 * simulated through the fake's `POST /_fake/inbound` shows up in the inbox with the assistant's
 * draft reply. Production never runs this.
 */
const DEMO_PHONE_NUMBER_ID = '106540352242922'
const DEMO_BUSINESS_ACCOUNT_ID = '102290129340398'
const fakePort = Number(process.env.FAKE_CHAT_PORT ?? 3100)
const modelPort = Number(process.env.FAKE_MODEL_PORT ?? 3200)
const apiPort = process.env.PORT ?? '3000'
// Fresh per demo: the webhook checks signatures exactly as in production.
const appSecret = randomBytes(16).toString('hex')

const platform = await startFakeChatPlatform({
  port: fakePort,
  webhook: { url: `http://127.0.0.1:${apiPort}/webhook/chat`, appSecret, phoneNumberId: DEMO_PHONE_NUMBER_ID },
  onRequest: (request) => { process.stdout.write(`[chat platform] ${request.method} ${request.path} ${JSON.stringify(request.body ?? null)}\n`) }
})
const model = await startFakeModelProvider({
  port: modelPort,
  defaultReply: { reply: 'Thanks for your message! A member of our team will confirm shortly.' },
  onRequest: (request) => { process.stdout.write(`[model provider] ${request.body.messages.length} messages to ${String(request.body.model)}\n`) }
})
process.stdout.write([
  `[chat platform] fake listening on ${platform.url}`,
  `[model provider] fake listening on ${model.url}: the assistant drafts a reply to each customer message (Inbox)`,
  '[chat platform] a customer writes to the service with:',
  `  curl -s localhost:${fakePort}/_fake/inbound -H 'content-type: application/json' -d '{"from":"15551234567","name":"Ana","text":"what is the price?"}'`,
  ''
].join('\n'))

// A process group of its own: pnpm does not pass signals on, so they are sent to the whole group.
const service = spawn('pnpm', ['start'], {
  stdio: 'inherit',
  detached: true,
  env: {
    ...process.env,
    CHAT_API_URL: platform.url,
    CHAT_ACCESS_TOKEN: FAKE_ACCESS_TOKEN,
    CHAT_PHONE_NUMBER_ID: DEMO_PHONE_NUMBER_ID,
    CHAT_BUSINESS_ACCOUNT_ID: DEMO_BUSINESS_ACCOUNT_ID,
    CHAT_APP_SECRET: appSecret,
    CHAT_VERIFY_TOKEN: 'demo-verify-token',
    ...fakeModelEnv(model)
  }
})

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => { if (service.pid !== undefined) process.kill(-service.pid, signal) })
}
service.once('exit', (code) => {
  Promise.all([platform.close(), model.close()]).then(() => process.exit(code ?? 0), () => process.exit(1))
})
