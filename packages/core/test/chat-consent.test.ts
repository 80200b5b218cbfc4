import { and, eq } from 'drizzle-orm'
import t from 'tap'
import { createCoreTestContext } from '@switchboard/testing/context'
import { newWamid } from '@switchboard/testing/fake-chat-platform'
import { ChatPlatformError, ChatPlatformUnavailableError } from '../src/chat/client.ts'
import { consentKeywordOf, consentKeywords, DEFAULT_CONSENT_SETTINGS, normalizeKeyword } from '../src/chat/consent.ts'
import { assertMayMessage, type ContactConsent } from '../src/chat/contacts.ts'
import { checkImportRow, importColumns } from '../src/chat/contacts-import.ts'
import { conversationsRepository } from '../src/chat/conversations.ts'
import type { InboundChatMessage } from '../src/chat/inbound.ts'
import { platformFailure } from '../src/chat/platform-errors.ts'
import { chatContacts, messages } from '../src/db/schema/index.ts'
import { DomainError } from '../src/errors.ts'
import { createLogger } from '../src/logger.ts'

/** The pure parts of contacts and consent, and a keyword's confirmation sent once however often its delivery is retried. */

t.test('keywords: the whole text, trimmed, spaces collapsed, any case and width', async (t) => {
  t.equal(normalizeKeyword('  stop \t all\n'), 'STOP ALL')
  t.equal(normalizeKeyword('ＳＴＯＰ'), 'STOP')
  t.equal(consentKeywordOf('Stop', DEFAULT_CONSENT_SETTINGS), 'optOut')
  t.equal(consentKeywordOf(' opt-out ', DEFAULT_CONSENT_SETTINGS), 'optOut')
  t.equal(consentKeywordOf('opt   in', DEFAULT_CONSENT_SETTINGS), 'optIn')
  t.equal(consentKeywordOf('unstop', DEFAULT_CONSENT_SETTINGS), 'optIn')
  t.equal(consentKeywordOf('stop it', DEFAULT_CONSENT_SETTINGS), null, 'a keyword inside a sentence is no keyword')
  t.equal(consentKeywordOf('STOP!', DEFAULT_CONSENT_SETTINGS), null)
  t.equal(consentKeywordOf('   ', DEFAULT_CONSENT_SETTINGS), null)
  t.equal(consentKeywordOf('basta', { optOutKeywords: ['Basta'], optInKeywords: ['ancora'] }), 'optOut')
})

t.test('the opt-out rule: a person\'s free-form reply to a contact who wrote again is the one exception', async (t) => {
  const optedOut: ContactConsent = { optedOut: true, consentChangedAt: new Date(0), consentSource: 'keyword', wroteSinceOptOut: false }
  const wroteAgain = { ...optedOut, wroteSinceOptOut: true }
  const refused = (consent: ContactConsent | null, origin: 'staff' | 'automation', isTemplate: boolean): boolean => {
    try {
      assertMayMessage(consent, origin, isTemplate)
      return false
    } catch (err) {
      t.match(err, { code: 'CONTACT_OPTED_OUT', message: 'The contact opted out of messages (STOP): no message can be sent', details: { consentSource: 'keyword' } })
      return true
    }
  }
  t.notOk(refused(null, 'automation', true), 'no contact: nobody opted out')
  t.notOk(refused({ ...optedOut, optedOut: false }, 'automation', true))
  t.ok(refused(optedOut, 'staff', false), 'staff, before the contact wrote again')
  t.ok(refused(optedOut, 'automation', false))
  t.notOk(refused(wroteAgain, 'staff', false), 'staff, free-form, after the contact wrote again')
  t.ok(refused(wroteAgain, 'staff', true), 'never a template')
  t.ok(refused(wroteAgain, 'automation', false), 'never a workflow, the assistant or a broadcast')
})

t.test('CSV header: the known columns in any case, the others ignored; no phone, a column twice, a bad attribute name refused', async (t) => {
  t.match(importColumns([' Phone ', 'NAME', 'labels', 'OptedOut', 'attr.city', 'attr.plan-tier', 'email']), {
    count: 7, phone: 0, name: 1, labels: 2, optedOut: 3, attributes: [{ index: 4, name: 'city' }, { index: 5, name: 'plan-tier' }], ignored: ['email']
  })
  t.throws(() => importColumns(['name']), { message: /no phone column/ })
  t.throws(() => importColumns(['phone', 'Phone']), { message: 'The CSV names column Phone twice' })
  t.throws(() => importColumns(['phone', 'attr.my city']), { message: /Column attr.my city: an attribute's name/ })
  t.throws(() => importColumns(['phone', 'attr.']), { message: /an attribute's name/ })
  t.throws(() => importColumns(['phone', ...Array.from({ length: 51 }, (_, n) => `attr.a${n}`)]), { message: /more than a contact's 50 attributes/ })
  t.throws(() => importColumns(Array.from({ length: 101 }, (_, n) => `c${n}`)), { message: /more than 100/ })
})

t.test('CSV rows: what a row sets, or why it is skipped', async (t) => {
  const columns = importColumns(['phone', 'name', 'labels', 'optedOut', 'attr.city', 'attr.__proto__'])
  t.same(checkImportRow([' +1 (555) 010-2030 ', ' Ana ', 'a; b ;a;;', 'Yes', 'Rome', 'x'], columns), {
    phone: '15550102030', name: 'Ana', labels: ['a', 'b'], optedOut: true, attributes: { city: 'Rome', ['__proto__']: 'x' }
  })
  const row = checkImportRow(['15550102030', '', '', '', '', 'x'], columns)
  t.same(Object.keys((row as { attributes: object }).attributes), ['__proto__'], 'an attribute named __proto__ is an own attribute')
  t.same(checkImportRow(['15550102030'], columns), { phone: '15550102030', labels: [], optedOut: false, attributes: {} }, 'missing cells are empty; an empty name sets none')
  const reason = (record: string[]): string => (checkImportRow(record, columns) as { reason: string }).reason
  t.equal(reason(['', 'Ana']), 'phone is missing')
  t.equal(reason(['12ab']), 'phone is not a phone number in international format')
  t.equal(reason(['1555010203', 'x'.repeat(201)]), 'name is longer than 200 characters')
  t.equal(reason(['1555010203', '', Array.from({ length: 51 }, (_, n) => `l${n}`).join(';')]), 'more than 50 labels')
  t.match(reason(['1555010203', '', 'y'.repeat(51)]), /^label y+… is longer than 50 characters$/)
  t.equal(reason(['1555010203', '', '', 'perhaps']), 'optedOut must be true or false (yes or no, 1 or 0)')
  t.equal(reason(['1555010203', '', '', '', 'z'.repeat(1001)]), 'attr.city is longer than 1000 characters')
  t.equal(reason(['1555010203', '', '', '', '', '', 'extra']), 'the row has 7 cells, the header names 6 columns')
  t.equal((checkImportRow(['1555010203', 'a\u0000b'], columns) as { name: string }).name, 'a\ufffdb', 'what Postgres cannot hold is replaced')
})

t.test('a keyword\'s delivery retried: the contact changes once and the confirmation is sent once', async (t) => {
  const { db } = await createCoreTestContext(t)
  const PHONE_NUMBER_ID = '106540352242922'
  const account = { id: 'default', name: 'Default', phoneNumberId: PHONE_NUMBER_ID, businessAccountId: null, accessToken: 'token', isSandbox: false }
  let failure: Error | undefined
  const sent: string[] = []
  const consent = consentKeywords({
    db,
    logger: createLogger('silent', 'chat-consent-test'),
    chat: {
      accounts: { forNumber: async () => account } as never,
      deliverText: async (_account, phone, text, _options, origin) => {
        t.equal(origin, 'consent', 'the confirmation is sent as the keyword\'s own')
        if (failure !== undefined) {
          const err = failure
          failure = undefined
          throw err
        }
        sent.push(`${phone}: ${text}`)
        return { wamid: newWamid(), status: 'sent' as const }
      }
    }
  })
  const conversations = conversationsRepository(db)
  const receivedAt = new Date(Math.floor(Date.now() / 1000) * 1000 - 30_000)
  async function inbound (phone: string, text: string): Promise<InboundChatMessage> {
    const wamid = newWamid()
    const stored = await conversations.recordInbound({ phoneNumberId: PHONE_NUMBER_ID, phone, name: 'Ana', wamid, type: 'text', content: text, receivedAt })
    return { phoneNumberId: PHONE_NUMBER_ID, userIds: [], phone, platformUserId: null, username: null, contactId: stored!.contactId, name: 'Ana', text, type: 'text', wamid, messageId: stored!.messageId, conversationId: stored!.conversationId }
  }
  const contact = async (phone: string) => (await db.select().from(chatContacts).where(and(eq(chatContacts.phoneNumberId, PHONE_NUMBER_ID), eq(chatContacts.phone, phone))))[0]!
  const confirmations = async (conversationId: string) => db.select().from(messages).where(and(eq(messages.conversationId, conversationId), eq(messages.direction, 'outbound')))

  const stop = await inbound('15550000001', 'stop')
  t.equal((await contact('15550000001')).optedOut, false, 'the inbound message made the contact')
  t.equal(await consent.answer(await inbound('15550000001', 'hello')), null, 'an ordinary message is not answered')
  t.equal(await consent.answer(stop), 'optOut')
  t.equal(await consent.answer(stop), 'optOut', 'the same message again (a retried delivery)')
  t.same(sent, [`15550000001: ${DEFAULT_CONSENT_SETTINGS.optOutConfirmation}`], 'confirmed once')
  t.match(await contact('15550000001'), { optedOut: true, consentSource: 'keyword', consentChangedAt: receivedAt })
  t.match(await confirmations(stop.conversationId), [{ content: DEFAULT_CONSENT_SETTINGS.optOutConfirmation, agentName: 'Consent', replyToId: stop.messageId, wamid: /^wamid\./ }])

  const start = await inbound('15550000002', 'START')
  failure = platformFailure(new ChatPlatformUnavailableError('unreachable')) as Error
  await t.rejects(consent.answer(start), { code: 'CHAT_PLATFORM_UNAVAILABLE' }, 'the platform may take it later: the delivery is retried')
  t.equal((await confirmations(start.conversationId)).length, 0, 'the claim is given back')
  t.equal(await consent.answer(start), 'optIn')
  t.same(sent.at(-1), `15550000002: ${DEFAULT_CONSENT_SETTINGS.optInConfirmation}`)

  const refused = await inbound('15550000003', 'unsubscribe')
  failure = platformFailure(new ChatPlatformError(400, { code: 131030, message: 'Recipient phone number not in allowed list' })) as Error
  t.ok(failure instanceof DomainError)
  t.equal(await consent.answer(refused), 'optOut', 'a refusal is final: the change stands, unconfirmed')
  t.equal((await contact('15550000003')).optedOut, true)
  t.equal((await confirmations(refused.conversationId)).length, 0)
})
