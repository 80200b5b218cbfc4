/** Schedules: the cron job schedulers in Redis kept in step with CRON workflows. */
export { createScheduleSync } from './sync.ts'
