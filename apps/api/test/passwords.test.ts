/**
 * Passwords and roles (README, Security: Passwords): any user changes their own password
 * with `POST /api/auth/password`; admins set a user's role and password with
 * `PATCH /api/users/:id`. A new password ends every token issued before it; the installation
 * always keeps an admin.
 */
import t from 'tap'
import { TEST_ADMIN } from '@switchboard/testing/config'
import { PASSWORD_CHANGES_PER_MINUTE } from '../src/routes/api/auth/index.ts'
import { buildTestApp } from './helper.ts'

const { app, request, adminToken, client, newMember } = await buildTestApp(t)

/** The status a token gets on a route every signed-in user may read. */
const statusWith = async (token: string): Promise<number> => (await request({ method: 'GET', url: '/api/automation/workflows', token })).statusCode
const login = async (email: string, password: string) => request({ method: 'POST', url: '/api/auth/login', payload: { email, password } })
const claimsOf = (token: string): Record<string, unknown> => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())
const changePassword = async (token: string, payload: Record<string, unknown>) => request({ method: 'POST', url: '/api/auth/password', token, payload })
const patchUser = async (token: string, id: string, payload: Record<string, unknown>) => request({ method: 'PATCH', url: `/api/users/${id}`, token, payload })

t.test('a user changes their own password: every earlier token ends, the answer carries a new one', async (t) => {
  const member = await newMember()
  const otherSession = await client.login({ email: member.email, password: 'member-password' })
  t.equal(await statusWith(otherSession), 200)

  const res = await changePassword(member.token, { currentPassword: 'member-password', newPassword: 'a-new-password' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(body.user, { id: member.id, email: member.email, role: 'member' })
  t.match(claimsOf(body.token), { sub: member.id, role: 'member', ver: 1 }, 'the new token carries the new token version')

  t.equal(await statusWith(member.token), 401, 'the token that made the change is ended')
  t.equal(await statusWith(otherSession), 401, 'so is every other session of the user')
  t.equal(await statusWith(body.token), 200, 'the new token works')
  t.equal((await login(member.email, 'member-password')).statusCode, 401, 'the old password no longer signs in')
  const again = await login(member.email, 'a-new-password')
  t.equal(again.statusCode, 200, 'the new one does')
  t.equal(claimsOf(again.json().token).ver, 1)
})

t.test('a wrong current password is 400, not 401: the token stays good and the password unchanged', async (t) => {
  const member = await newMember()
  const res = await changePassword(member.token, { currentPassword: 'not-my-password', newPassword: 'a-new-password' })
  t.equal(res.statusCode, 400)
  t.same(res.json(), { statusCode: 400, code: 'INVALID_CURRENT_PASSWORD', error: 'Current password is incorrect', message: 'Current password is incorrect' })
  t.equal(await statusWith(member.token), 200, 'the token still works')
  t.equal((await login(member.email, 'member-password')).statusCode, 200, 'the password is unchanged')
})

t.test('the new password obeys the rule for new users; both fields are required', async (t) => {
  const member = await newMember()
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ currentPassword: 'member-password', newPassword: 'short' }, 'newPassword must be 8 to 1024 characters'],
    [{ currentPassword: 'member-password', newPassword: 'x'.repeat(1025) }, 'newPassword must be 8 to 1024 characters'],
    [{ currentPassword: 'member-password' }, 'newPassword is required'],
    [{ newPassword: 'a-new-password' }, 'currentPassword is required'],
    [{ currentPassword: '', newPassword: 'a-new-password' }, 'currentPassword is required']
  ]
  for (const [payload, message] of cases) {
    const res = await changePassword(member.token, payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload).slice(0, 80))
    t.equal(res.json().message, message)
  }
  t.equal((await login(member.email, 'member-password')).statusCode, 200, 'nothing changed')
  t.equal((await request({ method: 'POST', url: '/api/auth/password', payload: { currentPassword: 'x', newPassword: 'a-new-password' } })).statusCode, 401, 'a token is required')
})

t.test('guessing the current password with a stolen token is rate limited per user', async (t) => {
  const member = await newMember()
  const statuses: number[] = []
  for (let i = 0; i <= PASSWORD_CHANGES_PER_MINUTE; i++) {
    statuses.push((await changePassword(member.token, { currentPassword: `guess-${i}`, newPassword: 'a-new-password' })).statusCode)
  }
  t.same(statuses.slice(0, PASSWORD_CHANGES_PER_MINUTE), Array(PASSWORD_CHANGES_PER_MINUTE).fill(400))
  const refused = await changePassword(member.token, { currentPassword: 'member-password', newPassword: 'a-new-password' })
  t.equal(refused.statusCode, 429, 'even the right password, until the minute is over')
  t.match(refused.json().message, /^Too many password changes, retry in \d+ seconds?$/)
  t.ok(Number(refused.headers['retry-after']) > 0)
  t.equal((await login(member.email, 'member-password')).statusCode, 200, 'the password is unchanged')
})

t.test('an admin sets a user\'s password: the user\'s tokens end, the new password signs in', async (t) => {
  const member = await newMember()
  const res = await patchUser(adminToken, member.id, { password: 'set-by-admin' })
  t.equal(res.statusCode, 200)
  t.same(Object.keys(res.json()).sort(), ['createdAt', 'email', 'id', 'quotas', 'role'], 'the public user, no hash')
  t.match(res.json(), { id: member.id, email: member.email, role: 'member' })
  t.equal(await statusWith(member.token), 401, 'the user\'s token is ended')
  t.equal((await login(member.email, 'member-password')).statusCode, 401)
  t.equal((await login(member.email, 'set-by-admin')).statusCode, 200)
  t.equal(await statusWith(adminToken), 200, 'the admin\'s own token is untouched')
})

t.test('an admin changes a role: it applies to the tokens the user holds at once', async (t) => {
  const member = await newMember()
  t.equal((await request({ method: 'GET', url: '/api/users', token: member.token })).statusCode, 403)
  const promoted = await patchUser(adminToken, member.id, { role: 'admin' })
  t.equal(promoted.statusCode, 200)
  t.equal(promoted.json().role, 'admin')
  t.equal((await request({ method: 'GET', url: '/api/users', token: member.token })).statusCode, 200, 'the same token now acts as an admin')
  t.equal((await patchUser(adminToken, member.id, { role: 'member' })).statusCode, 200)
  t.equal((await request({ method: 'GET', url: '/api/users', token: member.token })).statusCode, 403, 'and as a member again')
  t.equal(await statusWith(member.token), 200, 'a role change alone ends no token')
})

t.test('PATCH /api/users/:id refuses what it cannot do', async (t) => {
  const member = await newMember()
  const unknown = await patchUser(adminToken, 'z'.repeat(24), { role: 'admin' })
  t.equal(unknown.statusCode, 404)
  t.same(unknown.json(), { statusCode: 404, code: 'USER_NOT_FOUND', error: 'User not found', message: 'User not found' })
  const cases: Array<[Record<string, unknown>, string]> = [
    [{}, 'role, password or quotas is required'],
    [{ email: 'taken-over@example.com' }, 'role, password or quotas is required'],
    [{ role: 'root' }, 'role must be one of admin, member'],
    [{ password: 'short' }, 'password must be 8 to 1024 characters']
  ]
  for (const [payload, message] of cases) {
    const res = await patchUser(adminToken, member.id, payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.equal(res.json().message, message)
  }
  t.equal(await statusWith(member.token), 200, 'nothing changed')
})

t.test('the last admin can be neither demoted nor deleted; with another admin, either can', async (t) => {
  const me = (await login(TEST_ADMIN.email, TEST_ADMIN.password)).json().user.id as string
  const admins = async (): Promise<string[]> =>
    (await app.database.sql<Array<{ id: string }>>`select id from users where role = 'admin'`).map((user) => user.id)
  for (const id of await admins()) if (id !== me) t.equal((await patchUser(adminToken, id, { role: 'member' })).statusCode, 200)
  t.same(await admins(), [me], 'the installation\'s admin is the only one')

  const demote = await patchUser(adminToken, me, { role: 'member' })
  t.equal(demote.statusCode, 409)
  t.same(demote.json(), { statusCode: 409, code: 'LAST_ADMIN', error: 'The last admin cannot be demoted', message: 'The last admin cannot be demoted' })
  const remove = await request({ method: 'DELETE', url: `/api/users/${me}`, token: adminToken })
  t.equal(remove.statusCode, 409)
  t.equal(remove.json().message, 'The last admin cannot be deleted')
  t.equal((await patchUser(adminToken, me, { role: 'admin' })).statusCode, 200, 'keeping the role is no demotion')
  t.same(await admins(), [me])

  // Two admins demoting each other at once: one wins; the other, admitted as an admin before
  // the first committed, finds itself the last (409), or else is a member by then (403).
  const other = await client.newUser(adminToken, { role: 'admin' })
  const myToken = await client.login(TEST_ADMIN)
  const refusals: number[] = []
  for (let round = 0; round < 5; round++) {
    // Both roles cached, so that both requests pass the admin check before either demotes.
    for (const token of [myToken, other.token]) t.equal((await request({ method: 'GET', url: '/api/users', token })).statusCode, 200)
    const statuses = (await Promise.all([patchUser(myToken, other.id, { role: 'member' }), patchUser(other.token, me, { role: 'member' })]))
      .map((res) => res.statusCode)
    t.equal(statuses.filter((status) => status === 200).length, 1, `round ${round}: exactly one demotion succeeds`)
    refusals.push(...statuses.filter((status) => status !== 200))
    const left = await admins()
    t.equal(left.length, 1, 'one admin remains')
    const [winnerToken, loser] = left[0] === me ? [myToken, other.id] : [other.token, me]
    t.equal((await patchUser(winnerToken, loser, { role: 'admin' })).statusCode, 200)
  }

  t.ok(refusals.includes(409), `the race was run: the loser was refused ${refusals.join(', ')}`)
  t.ok(refusals.every((status) => status === 409 || status === 403))

  t.equal((await request({ method: 'DELETE', url: `/api/users/${other.id}`, token: myToken })).statusCode, 204, 'with two admins, one may be deleted')
  t.same(await admins(), [me])
})
