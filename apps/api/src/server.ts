import closeWithGrace from 'close-with-grace'
import { configuredOrExit, loadConfig } from '@switchboard/core/config'
import { createLogger } from '@switchboard/core/logger'
import { startTracing, stopTracing } from '@switchboard/core/observability'
import { buildServer } from './build.ts'

const config = configuredOrExit('api', () => loadConfig(process.env, { listens: true }))
// Before the server is built: the request spans' plugin is registered only when tracing is on.
await startTracing(config.tracing, 'switchboard-api', createLogger(config.logLevel, 'api'))
const server = await buildServer({ config })

closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) server.log.error({ err }, 'closing after an error')
  else server.log.info({ signal }, 'closing')
  await server.close()
  await stopTracing()
})

await server.listen({ port: config.port, host: config.host })
