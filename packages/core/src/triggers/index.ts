/** Triggers: how an event, a keyword, a cron tick, a fire, a webhook or a replay finds its workflows and starts runs. */
export { handleTick, type TickOutcome } from './cron.ts'
export { createTriggerTargets, type TriggerTargets } from './direct.ts'
export { dispatchEvents, emitEvent, lostEventsDispatch, type EmitEventInput } from './event.ts'
export { reactToInboundMessage } from './keyword.ts'
export { BULK_RETRY_MAX_RUNS, BULK_RETRY_STATUSES, planReplay, replayRuns } from './replay.ts'
