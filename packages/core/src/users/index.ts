/** Users: accounts, passwords, the viewer a request acts as, and the role cache. */
export { DUMMY_PASSWORD_HASH, hashPassword, PASSWORD_LENGTH, verifyPassword } from './password.ts'
export { USER_CHANGES_CHANNEL, type UserChanges, type UserManager, usersRepository, type UsersRepository } from './repository.ts'
export { createHolderCache, type HolderCache, type RoleCache, type TokenHolder } from './holder-cache.ts'
export { API_KEY_PREFIX, apiKeyNotFound, apiKeysRepository, hashApiKey, isApiKeyShaped, isWellFormedApiKey, MAX_API_KEYS_PER_USER, MAX_KEY_WORKFLOWS, type ApiKeysRepository, type KeyHolder, type KeyUse, type PublicApiKey } from './api-keys.ts'
export { isAdmin, mayUseWorkflow, viewerOf } from './viewer.ts'
export { checkSavedQuotas, effectiveQuotas, MAX_QUOTA, QUOTA_NAMES, type QuotaName, type Quotas } from './quotas.ts'
