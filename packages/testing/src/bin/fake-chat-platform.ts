import { FAKE_ACCESS_TOKEN, startFakeChatPlatform } from '../fake-chat-platform.ts'

/**
 * Demo mode: the fake chat platform as a process, so that the service can be
 * tried without a platform account. Point the API and worker at it with the
 * printed environment; sends are answered and logged here, nothing leaves the machine.
 */
const port = Number(process.env.FAKE_CHAT_PORT ?? 3100)
const platform = await startFakeChatPlatform({ port })
process.stdout.write([
  `fake chat platform listening on ${platform.url}`,
  'start the service with:',
  `  CHAT_API_URL=${platform.url} CHAT_ACCESS_TOKEN=${FAKE_ACCESS_TOKEN} CHAT_PHONE_NUMBER_ID=106540352242922 CHAT_BUSINESS_ACCOUNT_ID=102290129340398`,
  ''
].join('\n'))

let reported = 0
const timer = setInterval(() => {
  for (const request of platform.requests.slice(reported)) {
    process.stdout.write(`${request.method} ${request.path} ${JSON.stringify(request.body ?? null)}\n`)
  }
  reported = platform.requests.length
}, 500)

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    clearInterval(timer)
    platform.close().then(() => process.exit(0), () => process.exit(1))
  })
}
