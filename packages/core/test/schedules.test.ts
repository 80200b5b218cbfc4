import t from 'tap'
import { nextRunAt, plannedSchedule } from '../src/schedules/sync.ts'

const next = (cronExpression: string, timezone: string, after: string): string | undefined =>
  nextRunAt({ cronExpression, timezone }, new Date(after))?.toISOString()

t.test('a daily time keeps its wall-clock hour across DST changes', async (t) => {
  // New York springs forward on 2025-03-09: 09:00 is 14:00Z before, 13:00Z after.
  t.equal(next('0 9 * * *', 'America/New_York', '2025-03-08T12:00:00Z'), '2025-03-08T14:00:00.000Z')
  t.equal(next('0 9 * * *', 'America/New_York', '2025-03-08T15:00:00Z'), '2025-03-09T13:00:00.000Z')
  // Berlin falls back on 2025-10-26: 09:00 is 07:00Z before, 08:00Z after.
  t.equal(next('0 9 * * *', 'Europe/Berlin', '2025-10-25T06:00:00Z'), '2025-10-25T07:00:00.000Z')
  t.equal(next('0 9 * * *', 'Europe/Berlin', '2025-10-25T08:00:00Z'), '2025-10-26T08:00:00.000Z')
  // The same expression in UTC does not move.
  t.equal(next('0 9 * * *', 'UTC', '2025-10-25T10:00:00Z'), '2025-10-26T09:00:00.000Z')
})

t.test('hourly ticks through the repeated and the skipped hour', async (t) => {
  // Berlin 2025-10-26: 02:00-03:00 local happens twice (00:00Z-01:00Z CEST, 01:00Z-02:00Z CET);
  // an hourly schedule keeps firing every real hour.
  t.equal(next('0 * * * *', 'Europe/Berlin', '2025-10-26T00:30:00Z'), '2025-10-26T01:00:00.000Z')
  t.equal(next('0 * * * *', 'Europe/Berlin', '2025-10-26T01:30:00Z'), '2025-10-26T02:00:00.000Z')
  // Berlin 2025-03-30: 02:00 local does not exist; after 01:00 local (00:00Z) comes 03:00 local (01:00Z).
  t.equal(next('0 * * * *', 'Europe/Berlin', '2025-03-30T00:30:00Z'), '2025-03-30T01:00:00.000Z')
})

t.test('a daily time in the skipped hour moves on an hour; one in the repeated hour fires once', async (t) => {
  t.equal(next('30 2 * * *', 'Europe/Berlin', '2025-03-29T02:00:00Z'), '2025-03-30T01:30:00.000Z', '03:30 CEST')
  t.equal(next('30 2 * * *', 'Europe/Berlin', '2025-10-25T02:00:00Z'), '2025-10-26T00:30:00.000Z', '02:30 CEST')
  t.equal(next('30 2 * * *', 'Europe/Berlin', '2025-10-26T00:30:00Z'), '2025-10-27T01:30:00.000Z', 'not again at 02:30 CET')
})

t.test('six fields tick every second; 5 or 6 fields only; bad input has no next run', async (t) => {
  t.equal(next('* * * * * *', 'UTC', '2025-01-01T00:00:00.000Z'), '2025-01-01T00:00:01.000Z')
  t.equal(next('*/15 * * * * *', 'UTC', '2025-01-01T00:00:01.500Z'), '2025-01-01T00:00:15.000Z')
  t.equal(next('* * * *', 'UTC', '2025-01-01T00:00:00Z'), undefined)
  t.equal(next('* * * * * * *', 'UTC', '2025-01-01T00:00:00Z'), undefined)
  t.equal(next('61 * * * *', 'UTC', '2025-01-01T00:00:00Z'), undefined)
  t.equal(next('0 9 * * *', 'Mars/Olympus_Mons', '2025-01-01T00:00:00Z'), undefined)
})

t.test('only an active CRON workflow with a valid expression is scheduled', async (t) => {
  const now = new Date('2025-03-08T15:00:00Z')
  const cron = { isActive: true, triggerType: 'CRON' as const, triggerConfig: { cronExpression: '0 9 * * *', timezone: 'America/New_York' } }
  t.same(plannedSchedule(cron, now), {
    cronExpression: '0 9 * * *',
    timezone: 'America/New_York',
    nextRunAt: new Date('2025-03-09T13:00:00Z')
  })
  t.same(plannedSchedule({ ...cron, triggerConfig: { cronExpression: '0 9 * * *' } }, now)?.timezone, 'UTC')
  t.equal(plannedSchedule({ ...cron, isActive: false }, now), null)
  t.equal(plannedSchedule({ ...cron, triggerType: 'MANUAL' }, now), null)
  t.equal(plannedSchedule({ ...cron, triggerConfig: {} }, now), null, 'a CRON draft without an expression')
  t.equal(plannedSchedule({ ...cron, triggerConfig: { cronExpression: 'every day' } }, now), null)
})
