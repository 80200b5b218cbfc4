import t from 'tap'
import { DEFAULT_FAKE_TEMPLATES } from '@switchboard/testing/fake-chat-platform'
import { buildChatTestApp } from './chat-helper.ts'

/**
 * A template's parameters (README, Chat: template parameters), through the send route and the
 * send_chat_template node: header media, body variables and each kind of button, as the platform
 * receives them; what is refused with a 400 before the platform is called. The api with its worker in
 * process and the fake chat platform, which checks the components' wire format itself.
 */

const SALE = { name: 'spring_sale', language: 'en_US', body: 'Hi {{1}}, {{2}} off until Sunday.' }
const chat = await buildChatTestApp(t, { worker: true, fake: { templates: [...DEFAULT_FAKE_TEMPLATES, SALE] } })
const { request, fake } = chat
const member = await chat.newMember()

const lastSend = () => fake.sends().at(-1)?.body as { to: string, template: { name: string, components?: unknown[] } } | undefined
const send = async (payload: Record<string, unknown>) => request({ method: 'POST', url: '/api/chat/send/template', token: member.token, payload: { templateName: SALE.name, ...payload } })

const body = (...texts: string[]) => ({ type: 'body', parameters: texts.map((text) => ({ type: 'text', text })) })

t.test('the send route: an image header, body variables and the three kinds of button, exactly as the platform takes them', async (t) => {
  const phone = '16505551001'
  const res = await send({
    to: phone,
    components: [
      { type: 'header', parameters: [{ type: 'image', image: { link: 'https://cdn.example.com/sale.jpg' } }] },
      body('Ana', '20%'),
      { type: 'buttons', sub_type: 'url', index: 0, parameters: [{ type: 'text', text: 'orders/A-42' }] },
      { type: 'buttons', sub_type: 'quick_reply', index: 1, parameters: [{ type: 'payload', payload: 'STOP_PROMOS' }] },
      { type: 'buttons', sub_type: 'copy_code', index: 2, parameters: [{ type: 'coupon_code', coupon_code: 'SPRING20' }] }
    ]
  })
  t.equal(res.statusCode, 200, res.body)
  t.same(lastSend(), {
    messaging_product: 'whatsapp',
    to: phone,
    type: 'template',
    template: {
      name: SALE.name,
      language: { code: 'en_US' },
      components: [
        { type: 'header', parameters: [{ type: 'image', image: { link: 'https://cdn.example.com/sale.jpg' } }] },
        { type: 'body', parameters: [{ type: 'text', text: 'Ana' }, { type: 'text', text: '20%' }] },
        { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: 'orders/A-42' }] },
        { type: 'button', sub_type: 'quick_reply', index: '1', parameters: [{ type: 'payload', payload: 'STOP_PROMOS' }] },
        { type: 'button', sub_type: 'copy_code', index: '2', parameters: [{ type: 'coupon_code', coupon_code: 'SPRING20' }] }
      ]
    }
  })
  const list = await request({ method: 'GET', url: '/api/chat/conversations', token: member.token })
  const conversation = list.json().find((c: { phone: string }) => c.phone === phone)
  t.same(conversation.messages.at(-1).templateContent.bodyParameters, ['Ana', '20%'], 'the body\'s parameters kept for the inbox')

  for (const [kind, media] of [['video', { link: 'https://cdn.example.com/sale.mp4' }], ['document', { link: 'https://cdn.example.com/terms.pdf', filename: 'terms.pdf' }]] as const) {
    const res = await send({ to: phone, components: [{ type: 'HEADER', parameters: [{ type: kind, [kind]: media }] }, body('Ana', '20%')] })
    t.equal(res.statusCode, 200, res.body)
    t.same(lastSend()?.template.components?.[0], { type: 'header', parameters: [{ type: kind, [kind]: media }] }, `a ${kind} header`)
  }

  const located = [
    { type: 'header', parameters: [{ type: 'location', location: { latitude: 48.8566, longitude: 2.3522, name: 'Rue de Rivoli shop', address: '1 Rue de Rivoli, Paris' } }] },
    { type: 'body', parameters: [{ type: 'text', text: 'Ana' }, { type: 'currency', currency: { fallback_value: '€20', code: 'EUR', amount_1000: 20000 } }] }
  ]
  const byLocation = await send({ to: phone, components: located })
  t.equal(byLocation.statusCode, 200, byLocation.body)
  t.same(lastSend()?.template.components, located, 'a location header and a currency variable')
})

t.test('parameters the platform would refuse, or blank ones, are a 400 naming the field; the platform is not called', async (t) => {
  const image = (link: string) => ({ type: 'header', parameters: [{ type: 'image', image: { link } }] })
  const cases: Array<[string, unknown[], string]> = [
    ['a blank body variable', [body('Ana', '  ')], 'components[0].parameters[1].text needs a value: a template parameter is never sent blank'],
    ['an image by plain http', [image('http://cdn.example.com/sale.jpg')], 'components[0].parameters[0].image.link must be an https URL: the platform fetches it'],
    ['a header of two parameters', [{ type: 'header', parameters: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }], 'components[0].parameters must hold one parameter'],
    ['a coupon code over 15 characters', [body('Ana', '20%'), { type: 'buttons', sub_type: 'copy_code', index: 0, parameters: [{ type: 'coupon_code', coupon_code: 'SPRING2026SUNDAYS' }] }], 'components[1].parameters[0].coupon_code must be at most 15 characters'],
    ['a URL button given a payload', [{ type: 'buttons', sub_type: 'url', index: 0, parameters: [{ type: 'payload', payload: 'x' }] }], 'components[0].parameters[0].type must be text for a url button'],
    ['a button kind not sent with parameters here', [{ type: 'buttons', sub_type: 'phone_number', index: 0, parameters: [] }], 'components[0].sub_type must be one of url, quick_reply, copy_code'],
    ['a button index past the tenth', [{ type: 'buttons', sub_type: 'quick_reply', index: 10, parameters: [{ type: 'payload', payload: 'x' }] }], 'components[0].index must be the button\'s position, 0 to 9'],
    ['an unknown component', [{ type: 'carousel', cards: [] }], 'components[0].type must be header, body, footer or buttons'],
    ['a body variable of an object', [{ type: 'body', parameters: [{ type: 'text', text: { name: 'Ana' } }] }], 'components[0].parameters[0].text must be text']
  ]
  const before = fake.sends().length
  for (const [name, components, message] of cases) {
    const res = await send({ to: '16505551002', components })
    t.equal(res.statusCode, 400, name)
    t.match(res.json(), { code: 'VALIDATION_ERROR', message }, name)
  }
  const tooMany = await send({ to: '16505551002', components: Array.from({ length: 21 }, () => body('x')) })
  t.equal(tooMany.statusCode, 400)
  t.match(tooMany.json().message, 'components must hold at most 20 components')
  t.equal(fake.sends().length, before, 'nothing reached the platform')
})

t.test('the send_chat_template node fills header media and buttons from its templates, and fails on a blank value', async (t) => {
  const phone = '16505551003'
  const node = (components: unknown[]) => ({
    name: 'sale notice',
    triggerType: 'MANUAL' as const,
    nodes: [{ id: 'notice', type: 'send_chat_template', config: { phone: '{{triggerData.phone}}', templateName: SALE.name, components } }]
  })
  const components = [
    { type: 'header', parameters: [{ type: 'document', document: { link: '{{triggerData.invoiceUrl}}', filename: 'invoice-{{triggerData.order}}.pdf' } }] },
    { type: 'body', parameters: [{ type: 'text', text: '{{triggerData.name}}' }, { type: 'text', text: '{{triggerData.discount}}' }] },
    { type: 'buttons', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: 'orders/{{triggerData.order}}' }] },
    { type: 'buttons', sub_type: 'quick_reply', index: '1', parameters: [{ type: 'payload', payload: 'reorder:{{triggerData.order}}' }] },
    { type: 'buttons', sub_type: 'copy_code', index: '2', parameters: [{ type: 'coupon_code', coupon_code: '{{triggerData.code | upper}}' }] }
  ]
  const triggerData = { phone, name: 'Bo', discount: 15, order: 'A-7', code: 'bo15', invoiceUrl: 'https://shop.example.com/invoices/A-7.pdf' }
  const run = await chat.client.runWorkflow(member.token, node(components), triggerData)
  t.equal(run.status, 'SUCCESS', run.error ?? '')
  t.same(lastSend()?.template.components, [
    { type: 'header', parameters: [{ type: 'document', document: { link: 'https://shop.example.com/invoices/A-7.pdf', filename: 'invoice-A-7.pdf' } }] },
    { type: 'body', parameters: [{ type: 'text', text: 'Bo' }, { type: 'text', text: '15' }] },
    { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: 'orders/A-7' }] },
    { type: 'button', sub_type: 'quick_reply', index: '1', parameters: [{ type: 'payload', payload: 'reorder:A-7' }] },
    { type: 'button', sub_type: 'copy_code', index: '2', parameters: [{ type: 'coupon_code', coupon_code: 'BO15' }] }
  ], 'a number rendered into a body variable is sent as its text')

  const before = fake.sends().length
  const blank = await chat.client.runWorkflow(member.token, node(components), { ...triggerData, name: undefined }, { statuses: ['FAILED', 'SUCCESS'] })
  t.equal(blank.status, 'FAILED')
  t.equal(blank.error, 'components[1].parameters[0].text needs a value: a template parameter is never sent blank')
  t.equal(fake.sends().length, before, 'a blank variable is never sent')
})
