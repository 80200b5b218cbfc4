import t from 'tap'
import { interactiveMessage, mediaMessage } from '../src/chat/client.ts'
import { checkInteractive, flowReplyOf, interactiveReplyOf } from '../src/chat/interactive.ts'
import { checkContacts, checkEmoji, checkLocation, inboundContactsOf, inboundLocationOf, inboundReactionOf } from '../src/chat/kinds.ts'
import { checkMediaSend, inboundMediaOf } from '../src/chat/media.ts'
import { DomainError } from '../src/errors.ts'

/** The 400 a check refuses `input` with. */
function refusal (check: () => unknown): string {
  try {
    check()
  } catch (err) {
    if (err instanceof DomainError && err.code === 'VALIDATION_ERROR') return err.message
    throw err
  }
  throw new Error('accepted')
}

const rows = (n: number, prefix = 'r') => Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, title: `Row ${i}` }))

t.test('interactive messages: the platform\'s limits, each refused naming the field and the limit', async (t) => {
  const buttons = [{ id: 'yes', title: 'Yes' }, { id: 'no', title: 'No' }]
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['no type', { body: 'Hi', buttons }, 'type must be one of button, list, flow'],
    ['an unknown type', { type: 'product', body: 'Hi' }, 'type must be one of button, list, flow'],
    ['no body', { type: 'button', buttons }, 'body must be 1 to 1024 characters'],
    ['a body too long', { type: 'button', body: 'x'.repeat(1025), buttons }, 'body must be 1 to 1024 characters'],
    ['a header too long', { type: 'button', body: 'Hi', header: 'x'.repeat(61), buttons }, 'header must be 1 to 60 characters'],
    ['a footer too long', { type: 'button', body: 'Hi', footer: 'x'.repeat(61), buttons }, 'footer must be 1 to 60 characters'],
    ['no buttons', { type: 'button', body: 'Hi' }, 'buttons must hold 1 to 3 buttons'],
    ['four buttons', { type: 'button', body: 'Hi', buttons: rows(4) }, 'buttons must hold 1 to 3 buttons'],
    ['a title of 21 characters', { type: 'button', body: 'Hi', buttons: [{ id: 'a', title: 'x'.repeat(21) }] }, 'buttons[0].title must be 1 to 20 characters'],
    ['an id of 257 characters', { type: 'button', body: 'Hi', buttons: [{ id: 'x'.repeat(257), title: 'A' }] }, 'buttons[0].id must be 1 to 256 characters'],
    ['a button that is not an object', { type: 'button', body: 'Hi', buttons: ['yes'] }, 'buttons[0] must be an object with id and title'],
    ['two buttons with one id', { type: 'button', body: 'Hi', buttons: [{ id: 'a', title: 'A' }, { id: 'a', title: 'B' }] }, 'buttons[1].id repeats buttons[0].id: ids must be unique'],
    ['a list on buttons', { type: 'button', body: 'Hi', buttons, list: { button: 'Open', sections: [{ rows: rows(1) }] } }, 'list is only for type list'],
    ['buttons on a list', { type: 'list', body: 'Hi', buttons, list: { button: 'Open', sections: [{ rows: rows(1) }] } }, 'buttons is only for type button'],
    ['a list without list', { type: 'list', body: 'Hi' }, 'list is required for type list: {button, sections}'],
    ['a list button too long', { type: 'list', body: 'Hi', list: { button: 'x'.repeat(21), sections: [{ rows: rows(1) }] } }, 'list.button must be 1 to 20 characters'],
    ['no sections', { type: 'list', body: 'Hi', list: { button: 'Open', sections: [] } }, 'list.sections must hold 1 to 10 sections'],
    ['11 rows over two sections', { type: 'list', body: 'Hi', list: { button: 'Open', sections: [{ title: 'A', rows: rows(6, 'a') }, { title: 'B', rows: rows(5, 'b') }] } }, 'list.sections must hold at most 10 rows in all'],
    ['an untitled section of two', { type: 'list', body: 'Hi', list: { button: 'Open', sections: [{ title: 'A', rows: rows(1, 'a') }, { rows: rows(1, 'b') }] } }, 'list.sections[1].title is required when the list has more than one section'],
    ['a section without rows', { type: 'list', body: 'Hi', list: { button: 'Open', sections: [{ rows: [] }] } }, 'list.sections[0].rows must hold at least one row'],
    ['a row title of 25 characters', { type: 'list', body: 'Hi', list: { button: 'Open', sections: [{ rows: [{ id: 'a', title: 'x'.repeat(25) }] }] } }, 'list.sections[0].rows[0].title must be 1 to 24 characters'],
    ['a row description of 73 characters', { type: 'list', body: 'Hi', list: { button: 'Open', sections: [{ rows: [{ id: 'a', title: 'A', description: 'x'.repeat(73) }] }] } }, 'list.sections[0].rows[0].description must be 1 to 72 characters'],
    ['a row id of 201 characters', { type: 'list', body: 'Hi', list: { button: 'Open', sections: [{ rows: [{ id: 'x'.repeat(201), title: 'A' }] }] } }, 'list.sections[0].rows[0].id must be 1 to 200 characters'],
    ['a row id in two sections', { type: 'list', body: 'Hi', list: { button: 'Open', sections: [{ title: 'A', rows: rows(1) }, { title: 'B', rows: rows(1) }] } }, 'list.sections[1].rows[0].id repeats list.sections[0].rows[0].id: ids must be unique']
  ]
  for (const [what, input, message] of cases) t.equal(refusal(() => checkInteractive(input)), message, what)
})

t.test('interactive messages within the limits become the platform\'s wire format, nothing more', async (t) => {
  const buttons = checkInteractive({
    type: 'button',
    body: 'x'.repeat(1024),
    header: 'Menu',
    buttons: [{ id: 'a'.repeat(256), title: 'y'.repeat(20), extra: true }, { id: 'b', title: 'B' }, { id: 'c', title: 'C' }],
    list: null
  })
  t.same(interactiveMessage('15551234567', buttons), {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: '15551234567',
    type: 'interactive',
    interactive: {
      type: 'button',
      header: { type: 'text', text: 'Menu' },
      body: { text: 'x'.repeat(1024) },
      action: { buttons: [{ type: 'reply', reply: { id: 'a'.repeat(256), title: 'y'.repeat(20) } }, { type: 'reply', reply: { id: 'b', title: 'B' } }, { type: 'reply', reply: { id: 'c', title: 'C' } }] }
    }
  })
  const list = checkInteractive({
    type: 'list',
    body: 'Pick one',
    header: '',
    footer: 'Thanks',
    list: { button: 'Open', sections: [{ title: 'A', rows: rows(4, 'a') }, { title: 'B', rows: [...rows(5, 'b'), { id: 'z', title: 'Z', description: 'd'.repeat(72) }] }] }
  })
  t.same(interactiveMessage('15551234567', list).interactive, {
    type: 'list',
    body: { text: 'Pick one' },
    footer: { text: 'Thanks' },
    action: { button: 'Open', sections: [{ title: 'A', rows: rows(4, 'a') }, { title: 'B', rows: [...rows(5, 'b'), { id: 'z', title: 'Z', description: 'd'.repeat(72) }] }] }
  }, 'ten rows in all is the limit, not past it')
})

t.test('flows: the flow by id or name, its button, where it opens, its data bounded', async (t) => {
  const flow = (fields: Record<string, unknown>) => ({ type: 'flow', body: 'Book a table', flow: { id: '1234567890', cta: 'Book', ...fields } })
  const nested = (levels: number): Record<string, unknown> => levels === 1 ? { leaf: true } : { next: nested(levels - 1) }
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['no flow', { type: 'flow', body: 'Hi' }, 'flow is required for type flow: {id or name, cta, screen?, data?, token?, action?}'],
    ['a flow on buttons', { type: 'button', body: 'Hi', buttons: [{ id: 'a', title: 'A' }], flow: { id: '1', cta: 'Go' } }, 'flow is only for type flow'],
    ['buttons on a flow', { ...flow({}), buttons: [{ id: 'a', title: 'A' }] }, 'buttons is only for type button'],
    ['neither id nor name', flow({ id: undefined }), 'flow needs exactly one of flow.id and flow.name'],
    ['both id and name', flow({ name: 'booking' }), 'flow needs exactly one of flow.id and flow.name'],
    ['a button of 31 characters', flow({ cta: 'x'.repeat(31) }), 'flow.cta must be 1 to 30 characters'],
    ['an emoji on the button', flow({ cta: 'Book 📅' }), 'flow.cta must have no emoji'],
    ['an unknown action', flow({ action: 'open' }), 'flow.action must be one of navigate, data_exchange'],
    ['a screen for a data exchange', flow({ action: 'data_exchange', screen: 'START' }), 'flow.screen and flow.data are only for action navigate'],
    ['data without its screen', flow({ data: { a: 1 } }), 'flow.data needs flow.screen, the screen it is for'],
    ['empty data', flow({ screen: 'START', data: {} }), 'flow.data must be a non-empty object'],
    ['data that is a list', flow({ screen: 'START', data: [1] }), 'flow.data must be a non-empty object'],
    ['data 11 levels deep', flow({ screen: 'START', data: nested(11) }), 'flow.data must nest at most 10 levels'],
    ['data over 10 KiB', flow({ screen: 'START', data: { note: 'x'.repeat(10 * 1024) } }), 'flow.data must be at most 10240 bytes as JSON'],
    ['a token of 513 characters', flow({ token: 'x'.repeat(513) }), 'flow.token must be 1 to 512 characters']
  ]
  for (const [what, input, message] of cases) t.equal(refusal(() => checkInteractive(input)), message, what)

  t.same(interactiveMessage('15551234567', checkInteractive({ ...flow({ cta: 'x'.repeat(30), screen: 'START', data: nested(10), token: 'order-7' }), header: 'Tables', footer: 'Open daily' })).interactive, {
    type: 'flow',
    header: { type: 'text', text: 'Tables' },
    body: { text: 'Book a table' },
    footer: { text: 'Open daily' },
    action: {
      name: 'flow',
      parameters: { flow_message_version: '3', flow_id: '1234567890', flow_cta: 'x'.repeat(30), flow_token: 'order-7', flow_action: 'navigate', flow_action_payload: { screen: 'START', data: nested(10) } }
    }
  }, 'ten levels and thirty characters are the limits, not past them')
  t.same(interactiveMessage('15551234567', checkInteractive({ type: 'flow', body: 'Sign up', flow: { name: 'signup', cta: 'Sign up', action: 'Data_Exchange', screen: '', data: null } })).interactive, {
    type: 'flow',
    body: { text: 'Sign up' },
    action: { name: 'flow', parameters: { flow_message_version: '3', flow_name: 'signup', flow_cta: 'Sign up', flow_action: 'data_exchange' } }
  }, 'a data exchange (in any case) has no payload; empty fields are absent')
})

t.test('completed flows: the response parsed, bounded, and kept storable', async (t) => {
  const reply = (json: unknown) => flowReplyOf({ type: 'interactive', interactive: { type: 'nfm_reply', nfm_reply: { name: 'flow', body: 'Sent', response_json: json } } })
  t.same(reply('{"flow_token":"order-7","guests":4,"date":"2026-12-24"}'), { name: 'flow', body: 'Sent', response: { flow_token: 'order-7', guests: 4, date: '2026-12-24' } })
  t.same(reply('{"note":"a\\u0000b"}')?.response, { note: 'a\ufffdb' }, 'a NUL is made storable')
  t.same(reply(`{"note":"${'x'.repeat(64 * 1024)}"}`), { name: 'flow', body: 'Sent', response: {}, unreadable: 'too_large' })
  t.same(reply(`{"note":"${'é'.repeat(40 * 1024)}"}`)?.unreadable, 'too_large', 'bytes count, not characters')
  t.same(reply(`${'['.repeat(30000)}${']'.repeat(30000)}`)?.unreadable, 'not_json', 'a list is no response object')
  t.same(reply(`{"a":${'['.repeat(30000)}${']'.repeat(30000)}}`)?.unreadable, 'too_deep')
  t.same(reply(`{"a":${'{"a":'.repeat(19)}1${'}'.repeat(19)}}`)?.unreadable, undefined, '20 levels are kept')
  t.same(reply(`{"a":${'{"a":'.repeat(20)}1${'}'.repeat(20)}}`)?.unreadable, 'too_deep', '21 are not')
  t.same(reply('{"flow_token":'), { name: 'flow', body: 'Sent', response: {}, unreadable: 'not_json' })
  t.same(reply(42)?.unreadable, 'not_json')
  t.equal(flowReplyOf({ type: 'interactive', interactive: { type: 'button_reply', button_reply: { id: 'a', title: 'A' } } }), undefined)
  t.equal(flowReplyOf({ type: 'text', text: { body: 'hi' } }), undefined)
})

t.test('inbound locations: coordinates on the globe, text bounded', async (t) => {
  t.same(inboundLocationOf({ type: 'location', location: { latitude: 52.52, longitude: 13.405, name: 'Office', address: 'Unter den Linden 1', url: 'https://example.com' } }),
    { latitude: 52.52, longitude: 13.405, name: 'Office', address: 'Unter den Linden 1', url: 'https://example.com' })
  t.same(inboundLocationOf({ type: 'location', location: { latitude: -33.9, longitude: 151.2, name: 'n'.repeat(5000), address: '' } }), { latitude: -33.9, longitude: 151.2, name: 'n'.repeat(1000) })
  t.equal(inboundLocationOf({ type: 'location', location: { latitude: 91, longitude: 0 } }), undefined)
  t.equal(inboundLocationOf({ type: 'location', location: { latitude: '52', longitude: 13 } }), undefined)
  t.equal(inboundLocationOf({ type: 'text', location: { latitude: 1, longitude: 1 } }), undefined)
})

t.test('media sends: one of link and mediaId, https links, captions and file names where the platform shows them', async (t) => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['an unknown kind', { kind: 'gif', link: 'https://example.com/a.gif' }, 'kind must be one of image, document, audio, video, sticker'],
    ['neither link nor mediaId', { kind: 'image' }, 'link or mediaId is required'],
    ['both', { kind: 'image', link: 'https://example.com/a.jpg', mediaId: '123' }, 'link and mediaId cannot both be given: send one'],
    ['an http link', { kind: 'image', link: 'http://example.com/a.jpg' }, 'link must be an https URL'],
    ['a link that is no URL', { kind: 'image', link: 'menu.jpg' }, 'link must be an https URL'],
    ['a link too long', { kind: 'image', link: `https://example.com/${'a'.repeat(2048)}` }, 'link must be 1 to 2048 characters'],
    ['a media id too long', { kind: 'image', mediaId: '1'.repeat(257) }, 'mediaId must be 1 to 256 characters'],
    ['a caption on audio', { kind: 'audio', mediaId: '1', caption: 'listen' }, 'caption is not allowed for audio messages'],
    ['a caption on a sticker', { kind: 'sticker', mediaId: '1', caption: 'hi' }, 'caption is not allowed for sticker messages'],
    ['a caption too long', { kind: 'image', mediaId: '1', caption: 'x'.repeat(1025) }, 'caption must be 1 to 1024 characters'],
    ['a file name on an image', { kind: 'image', mediaId: '1', filename: 'a.jpg' }, 'filename is only for document messages'],
    ['a file name too long', { kind: 'document', mediaId: '1', filename: 'x'.repeat(241) }, 'filename must be 1 to 240 characters'],
    ['a caption that is no text', { kind: 'image', mediaId: '1', caption: 5 }, 'caption must be 1 to 1024 characters']
  ]
  for (const [what, input, message] of cases) t.equal(refusal(() => checkMediaSend(input)), message, what)

  t.same(mediaMessage('15551234567', checkMediaSend({ kind: 'document', link: 'https://example.com/menu.pdf', caption: 'Menu', filename: 'menu.pdf', mediaId: '' })), {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: '15551234567',
    type: 'document',
    document: { link: 'https://example.com/menu.pdf', caption: 'Menu', filename: 'menu.pdf' }
  }, 'an empty field counts as absent (a template that rendered nothing)')
  t.same(mediaMessage('15551234567', checkMediaSend({ kind: 'audio', mediaId: '4490709327384033' })).audio, { id: '4490709327384033' })
})

t.test('inbound taps and media: what a workflow gets, bounded', async (t) => {
  t.same(interactiveReplyOf({ type: 'interactive', interactive: { type: 'button_reply', button_reply: { id: 'yes', title: 'Yes' } } }), { type: 'button_reply', id: 'yes', title: 'Yes' })
  t.same(interactiveReplyOf({ type: 'interactive', interactive: { type: 'list_reply', list_reply: { id: 'r1', title: 'Row', description: 'd' } } }), { type: 'list_reply', id: 'r1', title: 'Row' })
  t.same(interactiveReplyOf({ type: 'button', button: { payload: 'STOP', text: 'Stop promotions' } }), { type: 'quick_reply', id: 'STOP', title: 'Stop promotions' })
  t.same(interactiveReplyOf({ type: 'interactive', interactive: { type: 'button_reply', button_reply: { id: 'x'.repeat(5000), title: 5 } } }), { type: 'button_reply', id: 'x'.repeat(1024), title: '' })
  t.equal(interactiveReplyOf({ type: 'interactive', interactive: { type: 'nfm_reply', nfm_reply: {} } }), undefined, 'a flow reply is not a tap')
  t.equal(interactiveReplyOf({ type: 'text', text: { body: 'yes' } }), undefined)

  t.same(inboundMediaOf({ type: 'image', image: { id: '1234', mime_type: 'image/jpeg', sha256: 'abc', caption: 'look' } }), { id: '1234', mimeType: 'image/jpeg', caption: 'look', sha256: 'abc' })
  t.same(inboundMediaOf({ type: 'document', document: { id: '5678', mime_type: 'application/pdf', filename: 'f'.repeat(2000) } }), { id: '5678', mimeType: 'application/pdf', filename: 'f'.repeat(1024) })
  t.equal(inboundMediaOf({ type: 'image', image: { id: '1'.repeat(257) } }), undefined, 'an id past the bound is no media id')
  t.equal(inboundMediaOf({ type: 'image', image: { mime_type: 'image/png' } }), undefined)
  t.equal(inboundMediaOf({ type: 'location', location: { id: '1' } }), undefined)
})

t.test('message kinds: sends checked, inbound ones kept within the bounds', async (t) => {
  t.same(checkLocation({ latitude: -90, longitude: 180, name: 'Pole' }), { latitude: -90, longitude: 180, name: 'Pole' })
  t.equal(refusal(() => checkLocation({ latitude: Number.NaN, longitude: 0 })), 'latitude must be a number from -90 to 90')
  t.equal(refusal(() => checkLocation({ latitude: 0, longitude: 0, address: '' })), 'address must be 1 to 1000 characters')
  t.equal(refusal(() => checkContacts([{ name: { formatted_name: 'A' }, pets: [] }])), 'contacts[0].pets is not a field of a contact card')
  t.equal(refusal(() => checkContacts([{ name: { formatted_name: 'A' }, phones: [{ phone: '1', fax: '2' }] }])), 'contacts[0].phones[0].fax is not one of phone, wa_id, type')
  t.equal(refusal(() => checkContacts([{ name: { formatted_name: 'A' }, birthday: 'May 1st' }])), 'contacts[0].birthday must be a date YYYY-MM-DD')
  t.equal(checkEmoji(''), '')
  t.equal(checkEmoji('👩🏽‍💻'), '👩🏽‍💻')
  t.equal(refusal(() => checkEmoji('<b>')), 'emoji must be one emoji, or "" to remove the reaction')

  t.same(inboundReactionOf({ type: 'reaction', reaction: { message_id: 'wamid.a' } }), { wamid: 'wamid.a', emoji: '' }, 'a removal without its emoji key')
  t.equal(inboundReactionOf({ type: 'reaction', reaction: { emoji: '👍' } }), undefined, 'a reaction naming no message')
  t.same(inboundContactsOf({ type: 'contacts', contacts: 'not a list' }), [])
  t.same(inboundContactsOf({ type: 'contacts', contacts: [{ name: { formatted_name: 'A\u0000b', nickname: 'x' }, phones: 'none', birthday: 'soon' }] }), [{ name: { formatted_name: 'A\ufffdb' } }], 'only the platform\'s fields, storable')
  t.equal(inboundContactsOf({ type: 'text', text: { body: 'hi' } }), undefined)
})
