import t from 'tap'
import { buildChatTestApp } from '../../apps/api/test/chat-helper.ts'
import { errorBodyProblem } from './error-body.ts'
import { sendWhileProbing } from './event-loop.ts'

/**
 * Hostile template bodies (issue 42), through the api's HTTP listener: each is a 400 naming the rule,
 * answered before the chat platform is called, while /health/live keeps answering (the event loop is
 * never held).
 */
const { app, fake, adminToken } = await buildChatTestApp(t)
const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })

const variables = (n: number): string => Array.from({ length: n }, (_, i) => `{{${i + 1}}}`).join(' ')
const exampleValues = (n: number): string[] => Array.from({ length: n }, (_, i) => `value ${i + 1}`)
const template = (fields: Record<string, unknown>) => ({ name: 'hostile', language: 'en_US', category: 'MARKETING', components: [{ type: 'BODY', text: 'Hi' }], ...fields })

const HOSTILE: Array<[string, unknown, string]> = [
  [
    'a body with 1,000 variables and 1,000 example values',
    template({ components: [{ type: 'BODY', text: variables(1000), example: { body_text: [exampleValues(1000)] } }] }),
    'components[].text must be 1 to 1024 characters (a BODY; a HEADER or FOOTER: 1 to 60)'
  ],
  [
    '1,000 example values for a body of 2 variables',
    template({ components: [{ type: 'BODY', text: 'Hi {{1}}, order {{2}} shipped', example: { body_text: [exampleValues(1000)] } }] }),
    'components[0].example.body_text[0] must give 2 values, one per variable'
  ],
  [
    'a 60 KiB component list',
    template({ components: Array.from({ length: 1000 }, (_, i) => ({ type: 'BODY', text: `Body number ${i} of a list that goes on and on and on` })) }),
    'components must hold a BODY and at most one HEADER, BODY, FOOTER, BUTTONS each'
  ],
  [
    'four components, two of them BODY',
    template({ components: [{ type: 'BODY', text: 'Hi' }, { type: 'FOOTER', text: 'Bye' }, { type: 'BODY', text: 'Again' }] }),
    'components[2] repeats BODY: a template has at most one HEADER, BODY, FOOTER, BUTTONS each'
  ],
  ['a name the platform refuses', template({ name: 'Summer Sale!' }), 'name must be 1 to 512 lowercase letters, digits and underscores'],
  ['a name of 10,000 characters', template({ name: 'x'.repeat(10_000) }), 'name must be 1 to 512 lowercase letters, digits and underscores'],
  [
    '11 buttons',
    template({ components: [{ type: 'BODY', text: 'Hi' }, { type: 'BUTTONS', buttons: Array.from({ length: 11 }, (_, i) => ({ type: 'QUICK_REPLY', text: `Reply ${i}` })) }] }),
    'buttons must hold 1 to 10 buttons'
  ],
  [
    'three URL buttons',
    template({ components: [{ type: 'BODY', text: 'Hi' }, { type: 'BUTTONS', buttons: [1, 2, 3].map((i) => ({ type: 'URL', text: `Link ${i}`, url: `https://example.com/${i}` })) }] }),
    'components[1].buttons may hold at most 2 URL buttons'
  ]
]

t.test('hostile template bodies: a precise 400 before the platform is called, the event loop free', async (t) => {
  for (const [what, body, message] of HOSTILE) {
    const serialized = JSON.stringify(body)
    const platformCalls = fake.requests.length
    const answer = await sendWhileProbing(baseUrl, '/api/chat/templates', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: serialized
    })
    t.equal(answer.status, 400, `${what}: ${answer.text.slice(0, 200)}`)
    t.equal(errorBodyProblem(answer.status, answer.text), undefined, `${what}: the error body`)
    t.equal(JSON.parse(answer.text).message, message, what)
    // sendWhileProbing throws when /health/live waits 2 s: the event loop was held.
    t.equal(fake.requests.length, platformCalls, `${what}: the platform was not called`)
  }
  t.ok(JSON.stringify(HOSTILE[2]![1]).length >= 60 * 1024, 'the component list is 60 KiB')
})
