import { fakeModelEnv, startFakeModelProvider } from '../fake-model-provider.ts'

/**
 * The fake model provider as a process of its own, for pointing an already
 * running service at it. Every completion is the same friendly draft, so a demo
 * shows a draft without a provider account; requests are printed here and
 * nothing leaves the machine.
 */
const port = Number(process.env.FAKE_MODEL_PORT ?? 3200)
const provider = await startFakeModelProvider({
  port,
  defaultReply: { reply: 'Thanks for your message! A member of our team will confirm shortly.' },
  onRequest: (request) => { process.stdout.write(`POST /v1/chat/completions ${JSON.stringify(request.body ?? null)}\n`) }
})
process.stdout.write([
  `fake model provider listening on ${provider.url}`,
  'start the service with:',
  `  ${Object.entries(fakeModelEnv(provider)).map(([name, value]) => `${name}=${value}`).join(' ')}`,
  ''
].join('\n'))

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    provider.close().then(() => process.exit(0), () => process.exit(1))
  })
}
