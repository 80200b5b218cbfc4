import closeWithGrace from 'close-with-grace'
import { configOrExit } from '@switchboard/core/config'
import { buildServer } from './build.ts'

const config = configOrExit('api')
const server = await buildServer({ config })

closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) server.log.error({ err }, 'closing after an error')
  else server.log.info({ signal }, 'closing')
  await server.close()
})

await server.listen({ port: config.port, host: config.host })
