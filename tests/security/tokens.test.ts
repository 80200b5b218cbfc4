import t from 'tap'
import { buildTestApp } from '../../apps/api/test/helper.ts'
import { forgedAuthorizations } from './forged-tokens.ts'
import { operationsOf } from './openapi.ts'

/**
 * Every non-public route refuses every token it should not trust with the same
 * 401 `Unauthorized` (README, Signing in), before looking at anything else:
 * the member's real token, altered in one way each, never gets through.
 */
const { request, newMember, config } = await buildTestApp(t)
const member = await newMember()
const unauthorized = { statusCode: 401, code: 'UNAUTHORIZED', error: 'Unauthorized', message: 'Unauthorized' }

const operations = operationsOf((await request({ method: 'GET', url: '/docs/json' })).json())
const protectedRoutes = operations.filter((op) => !op.isPublic)
const urlOf = (path: string): string => path.replace(/:[^/]+/g, 'x')

t.test('the protected routes are every /api route but login and the inbound webhook, and the MCP server', async (t) => {
  t.same(
    operations.filter((op) => op.isPublic && op.path.startsWith('/api/')).map((op) => op.path),
    ['/api/auth/login', '/api/automation/webhook/:workflowId']
  )
  t.ok(protectedRoutes.length >= 25, `${protectedRoutes.length} protected routes`)
  t.ok(protectedRoutes.every((op) => op.path.startsWith('/api/') || op.path === '/mcp'))
  t.same(protectedRoutes.filter((op) => op.path === '/mcp').map((op) => op.method).sort(), ['DELETE', 'GET', 'POST'])
})

t.test('the untampered member token passes authentication on every protected route', async (t) => {
  for (const op of protectedRoutes) {
    const res = await request({ method: op.method as 'GET', url: urlOf(op.path), token: member.token, payload: op.method === 'GET' || op.method === 'DELETE' ? undefined : {} })
    t.not(res.statusCode, 401, `${op.method} ${op.path}: ${res.body}`)
  }
})

const forged = forgedAuthorizations(member.token, config.jwtSecret)
for (const [kind, authorization] of Object.entries(forged)) {
  t.test(`${kind}: 401 Unauthorized on every protected route`, async (t) => {
    for (const op of protectedRoutes) {
      const res = await request({
        method: op.method as 'GET',
        url: urlOf(op.path),
        headers: authorization === undefined ? {} : { authorization },
        // Authentication comes before body validation: an empty object would be a 400 otherwise.
        payload: op.method === 'GET' || op.method === 'DELETE' ? undefined : {}
      })
      t.equal(res.statusCode, 401, `${op.method} ${op.path}`)
      t.same(res.json(), unauthorized, `${op.method} ${op.path} body`)
    }
  })
}
