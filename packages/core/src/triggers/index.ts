/** Triggers: how an event, a keyword, a cron tick, a fire or a webhook finds its workflows and starts runs. */
export { handleTick, type TickOutcome } from './cron.ts'
export { createTriggerTargets, type TriggerTargets } from './direct.ts'
export { emitEvent } from './event.ts'
export { reactToInboundMessage } from './keyword.ts'
