/**
 * The values of enumerated columns, and of the API fields made of them, with no code around
 * them: the schema modules (drizzle, node) and the api's route schemas read them from here, and
 * so does the console's bundle (`@switchboard/core/db/values`), which must not carry drizzle.
 */

/** In this order in the api's refusals (`triggerType must be one of …`). */
export const TRIGGER_TYPES = ['EVENT', 'CRON', 'WEBHOOK', 'KEYWORD', 'MANUAL', 'AGENT'] as const
export const DOMAINS = ['GENERAL', 'CHAT', 'PROJECTS', 'CLIENTS', 'AGENTS'] as const

export const RUN_STATUSES = ['PENDING', 'RUNNING', 'WAITING', 'SUCCESS', 'FAILED', 'CANCELLED'] as const
/** The statuses a run ends in. */
export const FINISHED_RUN_STATUSES = ['SUCCESS', 'FAILED', 'CANCELLED'] as const satisfies ReadonlyArray<typeof RUN_STATUSES[number]>
export const isFinished = (status: typeof RUN_STATUSES[number]): boolean => (FINISHED_RUN_STATUSES as readonly string[]).includes(status)

/** Whether the assistant answers a conversation: not at all, with drafts staff approve, or at once. */
export const AI_MODES = ['OFF', 'HYBRID', 'AUTO'] as const

/** What a broadcast's recipient shows: its send's status, then its message's (delivered, read, failed) once sent. */
export const BROADCAST_COUNT_STATUSES = ['queued', 'sent', 'delivered', 'read', 'failed', 'skipped'] as const

/**
 * Every action the audit log records (README, Audit log): a closed list, so that a filter on an
 * action that is never written is a 400 rather than an empty page.
 */
export const AUDIT_ACTIONS = [
  'auth.login', 'auth.login_failed', 'auth.password_changed',
  'user.created', 'user.deleted', 'user.role_changed', 'user.password_reset', 'user.quotas_changed',
  'api_key.created', 'api_key.revoked', 'api_key.first_used',
  'credential.created', 'credential.updated', 'credential.deleted',
  'workflow.created', 'workflow.updated', 'workflow.deleted', 'workflow.activated', 'workflow.deactivated',
  'workflow.imported', 'workflow.restored',
  'subscription.created', 'subscription.updated', 'subscription.deleted',
  'runs.bulk_retried',
  'broadcast.created'
] as const

/** What an audited action is done to. */
export const AUDIT_TARGET_TYPES = ['user', 'api_key', 'credential', 'workflow', 'subscription', 'broadcast'] as const

/**
 * Who sent an outbound message (README, The team inbox: who sent a message): a person through the API, the
 * assistant's turn, a workflow's run, a broadcast, or a consent keyword's confirmation.
 */
export const MESSAGE_SENDER_TYPES = ['user', 'assistant', 'workflow', 'broadcast', 'consent'] as const

/** A template's categories, as the platform names them (README, Chat: templates). */
export const TEMPLATE_CATEGORIES = ['MARKETING', 'UTILITY', 'AUTHENTICATION'] as const
/** A stored template's statuses (README, Chat: templates): the platform's review and what it did since. */
export const TEMPLATE_STATUSES = ['PENDING', 'APPROVED', 'REJECTED', 'PAUSED', 'DISABLED'] as const
/** The platform's quality score of a template (its `message_template_quality_update` webhook). */
export const TEMPLATE_QUALITIES = ['GREEN', 'YELLOW', 'RED', 'UNKNOWN'] as const
