import { FAKE_ACCESS_TOKEN, startFakeChatPlatform } from '../fake-chat-platform.ts'

/**
 * The fake chat platform as a process of its own, for pointing an already
 * running service at it (`pnpm start:demo` starts both together). Sends are
 * answered and printed here; nothing leaves the machine.
 */
const port = Number(process.env.FAKE_CHAT_PORT ?? 3100)
const platform = await startFakeChatPlatform({
  port,
  onRequest: (request) => { process.stdout.write(`${request.method} ${request.path} ${JSON.stringify(request.body ?? null)}\n`) }
})
process.stdout.write([
  `fake chat platform listening on ${platform.url}`,
  'start the service with:',
  `  CHAT_API_URL=${platform.url} CHAT_ACCESS_TOKEN=${FAKE_ACCESS_TOKEN} CHAT_PHONE_NUMBER_ID=106540352242922 CHAT_BUSINESS_ACCOUNT_ID=102290129340398`,
  ''
].join('\n'))

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    platform.close().then(() => process.exit(0), () => process.exit(1))
  })
}
