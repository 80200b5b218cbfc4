import t from 'tap'
import { checkTemplate } from '../src/chat/template-rules.ts'
import { DomainError } from '../src/errors.ts'

/** The 400 the checker refuses `input` with. */
function refusal (input: Record<string, unknown>): string {
  try {
    checkTemplate(input)
  } catch (err) {
    if (err instanceof DomainError && err.code === 'VALIDATION_ERROR') return err.message
    throw err
  }
  throw new Error('accepted')
}

const body = (text: string, example?: unknown) => ({ type: 'BODY', text, ...(example !== undefined && { example }) })
const template = (components: unknown[], fields: Record<string, unknown> = {}) => ({ name: 'order_update', language: 'en_US', category: 'UTILITY', components, ...fields })
const withButtons = (buttons: unknown[]) => template([body('Hi'), { type: 'BUTTONS', buttons }])
const quickReplies = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'QUICK_REPLY', text: `Reply ${i}` }))
const variables = (n: number) => Array.from({ length: n }, (_, i) => `{{${i + 1}}}`).join(' ')

t.test('a template within every rule is taken as written', async (t) => {
  const components = [
    { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['A-42'] } },
    body('Hi {{1}}, order {{2}} ships {{1}}.', { body_text: [['Ana', 'A-42']] }),
    { type: 'FOOTER', text: 'Reply STOP to opt out' },
    {
      type: 'BUTTONS',
      buttons: [
        { type: 'URL', text: 'Track', url: 'https://shop.example/track/{{1}}', example: ['https://shop.example/track/A-42'] },
        { type: 'URL', text: 'Shop', url: 'https://shop.example/' },
        { type: 'PHONE_NUMBER', text: 'Call us', phone_number: '+15550100' },
        { type: 'COPY_CODE', example: 'SAVE25' },
        ...quickReplies(6)
      ]
    }
  ]
  t.same(checkTemplate(template(components)), { name: 'order_update', language: 'en_US', category: 'UTILITY', components })
  const media = [{ type: 'HEADER', format: 'IMAGE', example: { header_handle: ['4::aW1hZ2U='] } }, body('Our new range')]
  t.same(checkTemplate(template(media, { name: 'x'.repeat(512), language: 'pt_BR', category: 'MARKETING' })).components, media)
  t.same(checkTemplate(template([{ type: 'HEADER', format: 'LOCATION' }, body('Find us here')])).category, 'UTILITY')
})

t.test('each of the platform\'s rules is refused naming the field and the rule', async (t) => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['a name with capitals', template([body('Hi')], { name: 'Order_Update' }), 'name must be 1 to 512 lowercase letters, digits and underscores'],
    ['a name with a dash', template([body('Hi')], { name: 'order-update' }), 'name must be 1 to 512 lowercase letters, digits and underscores'],
    ['a name of 513 characters', template([body('Hi')], { name: 'x'.repeat(513) }), 'name must be 1 to 512 lowercase letters, digits and underscores'],
    ['an empty name', template([body('Hi')], { name: '' }), 'name must be 1 to 512 lowercase letters, digits and underscores'],
    ['a language that is no code', template([body('Hi')], { language: 'English' }), 'language must be a language code such as en_US or ar'],
    ['an unknown category', template([body('Hi')], { category: 'TRANSACTIONAL' }), 'category must be one of MARKETING, UTILITY, AUTHENTICATION'],
    ['components that are no list', template([], { components: { type: 'BODY' } }), 'components must be a list of HEADER, BODY, FOOTER and BUTTONS components'],
    ['no BODY', template([{ type: 'FOOTER', text: 'Bye' }]), 'components must include a BODY'],
    ['two BODY components', template([body('Hi'), body('Again')]), 'components[1] repeats BODY: a template has at most one HEADER, BODY, FOOTER, BUTTONS each'],
    ['an unknown component', template([body('Hi'), { type: 'CAROUSEL' }]), 'components[1].type must be one of HEADER, BODY, FOOTER, BUTTONS'],
    ['a component that is no object', template(['BODY']), 'components[0] must be an object with type'],
    ['a body of 1,025 characters', template([body('x'.repeat(1025))]), 'components[0].text must be 1 to 1024 characters'],
    ['an empty body', template([body('')]), 'components[0].text must be 1 to 1024 characters'],
    ['a header of 61 characters', template([{ type: 'HEADER', format: 'TEXT', text: 'x'.repeat(61) }, body('Hi')]), 'components[0].text must be 1 to 60 characters'],
    ['a footer of 61 characters', template([body('Hi'), { type: 'FOOTER', text: 'x'.repeat(61) }]), 'components[1].text must be 1 to 60 characters'],
    ['a footer with a variable', template([body('Hi'), { type: 'FOOTER', text: 'Bye {{1}}' }]), 'components[1].text cannot hold variables'],
    ['a header without format', template([{ type: 'HEADER', text: 'Hi' }, body('Hi')]), 'components[0].format must be one of TEXT, IMAGE, VIDEO, DOCUMENT, LOCATION'],
    ['a header with two variables', template([{ type: 'HEADER', format: 'TEXT', text: '{{1}} {{2}}', example: { header_text: ['a', 'b'] } }, body('Hi')]), 'components[0].text may hold at most 1 variable'],
    ['a header variable without example', template([{ type: 'HEADER', format: 'TEXT', text: 'Order {{1}}' }, body('Hi')]), 'components[0].example.header_text must give 1 value, one per variable'],
    ['an image header without its sample', template([{ type: 'HEADER', format: 'IMAGE' }, body('Hi')]), 'components[0].example.header_handle must hold the upload handle of a sample image'],
    ['an image header with text', template([{ type: 'HEADER', format: 'IMAGE', text: 'Hi', example: { header_handle: ['h'] } }, body('Hi')]), 'components[0].text is only for format TEXT'],
    ['variables with a gap', template([body('Hi {{1}} and {{3}}', { body_text: [['a', 'b']] })]), 'components[0].text must number its variables {{1}} to {{2}} without a gap: {{2}} is missing'],
    ['a variable that starts at 2', template([body('Hi {{2}}', { body_text: [['a']] })]), 'components[0].text must number its variables {{1}} to {{1}} without a gap: {{1}} is missing'],
    ['a named variable', template([body('Hi {{first_name}}')]), 'components[0].text has {{first_name}}: variables are numbered {{1}}, {{2}}, …'],
    ['a padded variable', template([body('Hi {{ 1 }}')]), 'components[0].text has {{ 1 }}: variables are numbered {{1}}, {{2}}, …'],
    ['variables without an example', template([body('Hi {{1}}')]), 'components[0].example.body_text must be one list of 1 value, one per variable'],
    ['one example short', template([body('Hi {{1}} {{2}}', { body_text: [['a']] })]), 'components[0].example.body_text[0] must give 2 values, one per variable'],
    ['one example too many', template([body('Hi {{1}}', { body_text: [['a', 'b']] })]), 'components[0].example.body_text[0] must give 1 value, one per variable'],
    ['an empty example', template([body('Hi {{1}}', { body_text: [['']] })]), 'components[0].example.body_text[0][0] must be 1 to 2000 characters'],
    ['no buttons', withButtons([]), 'components[1].buttons must hold 1 to 10 buttons'],
    ['11 buttons', withButtons(quickReplies(11)), 'components[1].buttons must hold 1 to 10 buttons'],
    ['3 URL buttons', withButtons([1, 2, 3].map((i) => ({ type: 'URL', text: `Link ${i}`, url: `https://example.com/${i}` }))), 'components[1].buttons may hold at most 2 URL buttons'],
    ['2 phone buttons', withButtons([1, 2].map((i) => ({ type: 'PHONE_NUMBER', text: `Call ${i}`, phone_number: '+15550100' }))), 'components[1].buttons may hold at most 1 PHONE_NUMBER button'],
    ['2 copy code buttons', withButtons([{ type: 'COPY_CODE', example: 'A' }, { type: 'COPY_CODE', example: 'B' }]), 'components[1].buttons may hold at most 1 COPY_CODE button'],
    ['a button text of 26 characters', withButtons([{ type: 'QUICK_REPLY', text: 'x'.repeat(26) }]), 'components[1].buttons[0].text must be 1 to 25 characters'],
    ['an unknown button', withButtons([{ type: 'OTP', text: 'Copy' }]), 'components[1].buttons[0].type must be one of QUICK_REPLY, URL, PHONE_NUMBER, COPY_CODE'],
    ['a URL of 2,001 characters', withButtons([{ type: 'URL', text: 'Go', url: `https://example.com/${'x'.repeat(1982)}` }]), 'components[1].buttons[0].url must be 1 to 2000 characters'],
    ['a URL that is not http', withButtons([{ type: 'URL', text: 'Go', url: 'ftp://example.com/' }]), 'components[1].buttons[0].url must be an http or https URL'],
    ['a URL variable in the middle', withButtons([{ type: 'URL', text: 'Go', url: 'https://example.com/{{1}}/track', example: ['https://example.com/a/track'] }]), 'components[1].buttons[0].url may hold one variable, {{1}}, at its end only'],
    ['a URL variable without example', withButtons([{ type: 'URL', text: 'Go', url: 'https://example.com/{{1}}' }]), 'components[1].buttons[0].example must give 1 value, one per variable'],
    ['a phone number of 21 characters', withButtons([{ type: 'PHONE_NUMBER', text: 'Call', phone_number: '1'.repeat(21) }]), 'components[1].buttons[0].phone_number must be 1 to 20 characters'],
    ['a copy code of 16 characters', withButtons([{ type: 'COPY_CODE', example: 'x'.repeat(16) }]), 'components[1].buttons[0].example must be 1 to 15 characters']
  ]
  for (const [what, input, message] of cases) t.equal(refusal(input), message, what)
})

t.test('hostile sizes are refused at once, reading no more than the rule needs', async (t) => {
  const started = performance.now()
  t.equal(refusal(template([body(variables(1000), { body_text: [Array.from({ length: 1000 }, (_, i) => `v${i}`)] })])),
    'components[0].text must be 1 to 1024 characters', '1,000 variables do not fit a body')
  t.equal(refusal(template([body('Hi {{1}} {{2}}', { body_text: [Array.from({ length: 1000 }, (_, i) => `v${i}`)] })])),
    'components[0].example.body_text[0] must give 2 values, one per variable', '1,000 example values for 2 variables')
  const sixtyKiB = Array.from({ length: 1000 }, () => body('x'.repeat(60)))
  t.ok(JSON.stringify(sixtyKiB).length >= 60 * 1024, 'the list is 60 KiB')
  t.equal(refusal(template(sixtyKiB)), 'components[1] repeats BODY: a template has at most one HEADER, BODY, FOOTER, BUTTONS each', 'a 60 KiB component list')
  t.equal(refusal(template([body(`${'{{'.repeat(500)}}}`)])), 'components[0].text has {{}}: variables are numbered {{1}}, {{2}}, …', '500 opening braces are read once')
  t.equal(refusal(template([body(`${'{{x'.repeat(300)}}}`)])), 'components[0].text has {{x}}: variables are numbered {{1}}, {{2}}, …', 'unclosed braces are read once')
  t.ok(performance.now() - started < 200, `all refused in ${Math.round(performance.now() - started)} ms`)
})
