import t from 'tap'
import { chatChangeFeed, type ChatChange, type ChatChangeSubscriber } from '../src/chat/changes.ts'

/** A subscriber that remembers what it was given and whether it was ended. */
function stream (userId: string, phoneNumberId: string) {
  const received: Array<ChatChange | null> = []
  let ended = 0
  const subscriber: ChatChangeSubscriber = { userId, phoneNumberId, deliver: (change) => { received.push(change) }, end: () => { ended++ } }
  return { subscriber, received, ended: () => ended }
}

const payload = (change: Record<string, unknown>): string => JSON.stringify(change)

t.test('a change reaches the streams of its number only, as ids', async (t) => {
  const feed = chatChangeFeed({ maxPerUser: 10, maxStreams: 100 })
  const a = stream('u1', '111')
  const b = stream('u2', '111')
  const other = stream('u1', '222')
  for (const s of [a, b, other]) feed.subscribe(s.subscriber)
  feed.publish(payload({ kind: 'message.created', phoneNumberId: '111', conversationId: 'c1', messageId: 'm1' }))
  feed.publish(payload({ kind: 'conversation.updated', phoneNumberId: '111', conversationId: 'c1', messageId: null }))
  feed.publish(payload({ kind: 'note.created', phoneNumberId: '111', conversationId: 'c1', noteId: 'n1' }))
  const expected = [
    { kind: 'message.created', phoneNumberId: '111', conversationId: 'c1', messageId: 'm1' },
    { kind: 'conversation.updated', phoneNumberId: '111', conversationId: 'c1' },
    { kind: 'note.created', phoneNumberId: '111', conversationId: 'c1', noteId: 'n1' }
  ]
  t.same(a.received, expected)
  t.same(b.received, expected)
  t.same(other.received, [], 'another number hears nothing')
})

t.test('what is not a change is dropped: not JSON, an unknown kind, a missing or oversized id', async (t) => {
  const feed = chatChangeFeed({ maxPerUser: 10, maxStreams: 100 })
  const s = stream('u1', '111')
  feed.subscribe(s.subscriber)
  for (const bad of [
    'not json', 'null', '"text"',
    payload({ kind: 'message.deleted', phoneNumberId: '111', conversationId: 'c1' }),
    payload({ kind: 'message.created', phoneNumberId: '111' }),
    payload({ kind: 'message.created', phoneNumberId: '111', conversationId: 'c'.repeat(201) }),
    payload({ kind: 'message.created', phoneNumberId: 111, conversationId: 'c1' })
  ]) feed.publish(bad)
  t.same(s.received, [])
})

t.test('bounds: streams per user and per process; a removed stream frees its place', async (t) => {
  const feed = chatChangeFeed({ maxPerUser: 2, maxStreams: 3 })
  const first = feed.subscribe(stream('u1', '111').subscriber)
  feed.subscribe(stream('u1', '222').subscriber)
  t.throws(() => feed.subscribe(stream('u1', '111').subscriber), { code: 'TOO_MANY_EVENT_STREAMS', message: 'Too many event streams: at most 2 per user' })
  feed.subscribe(stream('u2', '111').subscriber)
  t.throws(() => feed.subscribe(stream('u3', '111').subscriber), { code: 'TOO_MANY_EVENT_STREAMS', message: 'Too many event streams on this server: retry later' })
  t.equal(feed.size, 3)
  first()
  first()
  t.equal(feed.size, 2, 'removing twice counts once')
  feed.subscribe(stream('u1', '111').subscriber)
  t.equal(feed.size, 3)
})

t.test('missed announcements: every stream is told to read everything again', async (t) => {
  const feed = chatChangeFeed({ maxPerUser: 10, maxStreams: 100 })
  const a = stream('u1', '111')
  const b = stream('u2', '222')
  feed.subscribe(a.subscriber)
  feed.subscribe(b.subscriber)
  feed.missed()
  t.same(a.received, [null])
  t.same(b.received, [null])
})

t.test('a changed user\'s streams end, each once, and stop hearing; close ends every stream', async (t) => {
  const feed = chatChangeFeed({ maxPerUser: 10, maxStreams: 100 })
  const mine = [stream('u1', '111'), stream('u1', '222')]
  const theirs = stream('u2', '111')
  for (const s of [...mine, theirs]) feed.subscribe(s.subscriber)
  feed.endUser('u1')
  feed.endUser('u1')
  t.same(mine.map((s) => s.ended()), [1, 1])
  t.equal(theirs.ended(), 0)
  t.equal(feed.size, 1)
  feed.publish(payload({ kind: 'message.created', phoneNumberId: '111', conversationId: 'c1', messageId: 'm1' }))
  t.same(mine[0]!.received, [], 'an ended stream hears nothing more')
  t.equal(theirs.received.length, 1)
  feed.close()
  t.equal(theirs.ended(), 1)
  t.equal(feed.size, 0)
})
