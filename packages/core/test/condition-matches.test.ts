import t from 'tap'
import { MATCH_PROGRAM_MAX_SIZE, MATCH_SUBJECT_MAX_LENGTH, condition, testCondition } from '../src/engine/nodes/condition.ts'
import type { NodeContext } from '../src/engine/types.ts'

/** Runs a condition node `field matches pattern` against `triggerData.text`. */
async function matches (text: unknown, pattern: unknown): Promise<boolean> {
  const rawConfig = { field: 'triggerData.text', operator: 'matches', value: pattern }
  const context = { node: { id: 'c', type: 'condition', config: rawConfig }, config: rawConfig, rawConfig, result: { triggerData: { text } } } as unknown as NodeContext
  const { output } = await condition.execute(context)
  return (output as { matched: boolean }).matched
}

t.test('matches runs RE2: the classic catastrophic patterns take linear time', async (t) => {
  for (const [pattern, text] of [
    ['^(a|a)*$', 'a'.repeat(40) + '!'],
    ['^(a|a)*$', 'a'.repeat(MATCH_SUBJECT_MAX_LENGTH - 1) + '!'],
    ['^(a+)+$', 'a'.repeat(MATCH_SUBJECT_MAX_LENGTH - 1) + '!'],
    ['^(\\w+\\s?)*$', 'word '.repeat(MATCH_SUBJECT_MAX_LENGTH / 5 - 1) + '!'],
    ['(x+x+)+y', 'x'.repeat(MATCH_SUBJECT_MAX_LENGTH)],
    // The costliest kind of pattern allowed: counted repetition up to the program size bound.
    ['[ab]{497}c', 'ab'.repeat(MATCH_SUBJECT_MAX_LENGTH / 2 - 1) + 'xc']
  ]) {
    const started = performance.now()
    t.equal(await matches(text, pattern), false)
    const elapsed = performance.now() - started
    t.ok(elapsed < 1000, `${pattern} on ${text.length} characters: ${Math.round(elapsed)}ms`)
  }
})

t.test('ordinary patterns behave as before', async (t) => {
  t.equal(await matches('order-123', '^order-\\d+$'), true)
  t.equal(await matches('Order-123', '(?i)^order-[0-9]+$'), true)
  t.equal(await matches('order-x', '^order-\\d+$'), false)
  t.equal(await matches(42, '^4'), true)
  t.equal(await matches({ id: 'abc' }, '"id":"abc"'), true)
  t.equal(await matches(undefined, '.*'), false)
})

t.test('patterns RE2 cannot run, and oversized patterns or texts, fail the node with the reason', async (t) => {
  await t.rejects(matches('aa', '(a)\\1'), { name: 'NodeError', message: 'value is not a valid regular expression (RE2 syntax): invalid escape sequence: `\\1`' })
  await t.rejects(matches('ab', 'a(?=b)'), { message: /^value is not a valid regular expression \(RE2 syntax\): invalid or unsupported Perl syntax/ })
  await t.rejects(matches('a', '('), { message: 'value is not a valid regular expression (RE2 syntax): missing closing ): `(`' })
  await t.rejects(matches('a', 'a'.repeat(1001)), { message: 'value is not a usable regular expression: longer than 1000 characters' })
  await t.rejects(matches('ab', '(a|b){1000}c'), { message: `value is not a usable regular expression: it compiles to 3003 instructions, more than ${MATCH_PROGRAM_MAX_SIZE}` })
  await t.rejects(matches('a'.repeat(MATCH_SUBJECT_MAX_LENGTH + 1), 'a'), { message: `field value is too long to match: more than ${MATCH_SUBJECT_MAX_LENGTH} characters` })
})

t.test('gt, gte, lt, lte: numbers and decimal texts by value, two ISO 8601 timestamps as instants, anything else false', async (t) => {
  t.equal(testCondition('gt', 'n/a', 10), false, 'text that is no number is not greater than 10')
  t.equal(testCondition('lt', 'n/a', 10), false, 'nor less')
  for (const value of ['', null, undefined, true, { n: 11 }, [11], '11 apples', ' 11']) {
    t.equal(testCondition('gt', value, 10) || testCondition('lte', value, 10), false, `${JSON.stringify(value)} against 10`)
  }
  t.equal(testCondition('gt', '11', 10), true)
  t.equal(testCondition('gt', '9', '10'), false, '"9" is less than "10" by value, not greater as text')
  t.equal(testCondition('lt', '-2.5', 0), true)
  t.equal(testCondition('gte', 10, '10'), true)
  t.equal(testCondition('gt', '2026-01-02T00:00:00Z', '2026-01-01T23:00:00Z'), true)
  t.equal(testCondition('lt', '2026-01-01T10:00:00+02:00', '2026-01-01T09:00:00Z'), true, 'instants, not text: 08:00Z is before 09:00Z')
  t.equal(testCondition('gte', '2026-01-01', '2026-01-01T00:00:00Z'), true, 'a date is its midnight UTC')
  t.equal(testCondition('gt', '2026-01-02', 10), false, 'a timestamp and a number are not ordered')
})
