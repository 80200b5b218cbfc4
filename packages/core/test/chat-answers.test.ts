import t from 'tap'
import { RE2JS } from 're2js'
import { isExitKeyword, readAnswer } from '../src/chat/answers.ts'

/** How an `ask` node reads an answer (README, Conversations): what is valid for each `expect`, and its parsed value. */
const text = (body: string, extra: Record<string, unknown> = {}) => ({ messageId: 'm1', wamid: 'wamid.1', type: 'text', text: body, ...extra })

t.test('text, number, email, phone', async (t) => {
  t.same(readAnswer(text('  hello   there '), { expect: 'text' }), { valid: true, value: 'hello there' })
  t.same(readAnswer(text('   '), { expect: 'text' }), { valid: false })
  t.same(readAnswer(text('[image]', { type: 'image', media: { id: 'x' } }), { expect: 'text' }), { valid: false }, 'media is no text answer')
  t.same(readAnswer(text('42'), { expect: 'number' }), { valid: true, value: 42 })
  t.same(readAnswer(text('-3.5'), { expect: 'number' }), { valid: true, value: -3.5 })
  t.same(readAnswer(text('1,234,567.25'), { expect: 'number' }), { valid: true, value: 1234567.25 })
  t.same(readAnswer(text('12 apples'), { expect: 'number' }), { valid: false })
  t.same(readAnswer(text('1e9999'), { expect: 'number' }), { valid: false })
  t.same(readAnswer(text(' Ana@Example.COM '), { expect: 'email' }), { valid: true, value: 'ana@example.com' })
  t.same(readAnswer(text('ana at example'), { expect: 'email' }), { valid: false })
  t.same(readAnswer(text('+1 (555) 010-9999'), { expect: 'phone' }), { valid: true, value: '+15550109999' })
  t.same(readAnswer(text('call me'), { expect: 'phone' }), { valid: false })
})

t.test('dates: year first or day first, real days only', async (t) => {
  t.same(readAnswer(text('2026-11-29'), { expect: 'date' }), { valid: true, value: '2026-11-29' })
  t.same(readAnswer(text('29/11/2026'), { expect: 'date' }), { valid: true, value: '2026-11-29' })
  t.same(readAnswer(text('1.2.2027'), { expect: 'date' }), { valid: true, value: '2027-02-01' })
  t.same(readAnswer(text('31/02/2026'), { expect: 'date' }), { valid: false })
  t.same(readAnswer(text('tomorrow'), { expect: 'date' }), { valid: false })
})

t.test('choices: a tap by its id, or an id or title typed in any case', async (t) => {
  const choices = [{ id: 'human', title: 'Talk to a person' }, { id: 'done', title: 'No, thanks' }]
  t.same(readAnswer(text('Talk to a person', { interactive: { type: 'button_reply', id: 'human', title: 'Talk to a person' } }), { expect: 'choice', choices }), { valid: true, value: 'human' })
  t.same(readAnswer(text('no, THANKS'), { expect: 'choice', choices }), { valid: true, value: 'done' })
  t.same(readAnswer(text('HUMAN'), { expect: 'choice', choices }), { valid: true, value: 'human' })
  t.same(readAnswer(text('maybe'), { expect: 'choice', choices }), { valid: false })
})

t.test('media and patterns', async (t) => {
  const media = { id: 'media-1', mimeType: 'image/jpeg' }
  t.same(readAnswer(text('[image]', { type: 'image', media }), { expect: 'media' }), { valid: true, value: media })
  t.same(readAnswer(text('a photo'), { expect: 'media' }), { valid: false })
  const pattern = RE2JS.compile('[0-9]{4,10}')
  t.same(readAnswer(text(' 48213 '), { expect: 'pattern', pattern }), { valid: true, value: '48213' })
  t.same(readAnswer(text('order 48213'), { expect: 'pattern', pattern }), { valid: false }, 'the whole answer must match')
})

t.test('locations and flows: only the message of that kind, its place or its response the value', async (t) => {
  const location = { latitude: 52.52, longitude: 13.405, name: 'Office' }
  const flowReply = { name: 'flow', body: 'Sent', response: { flow_token: 't', guests: 4 } }
  t.same(readAnswer(text('[location]', { type: 'location', details: { location } }), { expect: 'location' }), { valid: true, value: location })
  t.same(readAnswer(text('Unter den Linden 1'), { expect: 'location' }), { valid: false }, 'an address typed is no location')
  t.same(readAnswer(text('[flow]', { type: 'interactive', details: { flowReply } }), { expect: 'flow' }), { valid: true, value: { flow_token: 't', guests: 4 } })
  t.same(readAnswer(text('done'), { expect: 'flow' }), { valid: false })
  t.same(readAnswer(text('[flow]', { type: 'interactive', details: { flowReply: { ...flowReply, response: {}, unreadable: 'too_large' } } }), { expect: 'flow' }), { valid: false }, 'a response not kept is nothing to read')
  t.same(readAnswer(text('[location]', { type: 'location', details: { location } }), { expect: 'text' }), { valid: false }, 'a location is no text answer')
  t.same(readAnswer(text('[flow]', { type: 'interactive', details: { flowReply } }), { expect: 'location' }), { valid: false })
})

t.test('exit keywords: the whole message in any case', async (t) => {
  t.ok(isExitKeyword(text(' Never   MIND '), ['never mind']))
  t.notOk(isExitKeyword(text('never mind the order'), ['never mind']))
  t.notOk(isExitKeyword(text(''), ['']))
})
