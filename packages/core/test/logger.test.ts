import t from 'tap'
import { createLogger } from '../src/logger.ts'

t.test('authorization headers, passwords and tokens never reach the log', async (t) => {
  const lines: string[] = []
  const logger = createLogger('info', 'test', { write: (line: string) => { lines.push(line) } })
  logger.info({
    req: { headers: { authorization: 'Bearer secret-jwt', cookie: 'sid=1', 'user-agent': 'tap' } },
    body: { password: 'hunter2', accessToken: 'EAAG-secret', email: 'a@example.com' },
    token: 'raw-token'
  }, 'request')
  const text = lines.join('')
  for (const secret of ['secret-jwt', 'sid=1', 'hunter2', 'EAAG-secret', 'raw-token']) {
    t.notMatch(text, secret, `${secret} is redacted`)
  }
  t.match(text, 'a@example.com')
  t.match(text, 'tap')
  t.match(JSON.parse(text).req.headers.authorization, '[redacted]')
})
