/** The database: connection, schema, migrations and what makes values storable. */
export { createDatabase, type Database, type Db } from './client.ts'
export { DatabaseSetupError, ensureDatabase, migrateDatabase, MIGRATIONS_FOLDER } from './migrate.ts'
export { API_KEY_SCOPES, type ApiKeyScope, AI_MODES, ASSISTANT_TURN_OUTCOMES, ASSISTANT_TURN_STATUSES, BROADCAST_STATUSES, CONVERSATION_PRIORITIES, DRAFT_DECISIONS, CREDENTIAL_TYPES, DOMAINS, EDGE_RULES, LOG_LEVELS, DRAFT_STATUSES, MESSAGE_DIRECTIONS, MESSAGE_SENDER_TYPES, MESSAGE_STATUSES, RUN_STATUSES, TRIGGER_TYPES, USER_ROLES, DELIVERY_STATUSES, KNOWLEDGE_SOURCE_STATUSES, KNOWLEDGE_SOURCE_TYPES, type DeliveryStatus, type CancelOn, type FlowControl, type User, type UserRole } from './schema/index.ts'
export { storableText } from './storable.ts'
