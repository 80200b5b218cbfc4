/** Users: accounts, passwords, the viewer a request acts as, and the role cache. */
export { DUMMY_PASSWORD_HASH, hashPassword, PASSWORD_LENGTH, verifyPassword } from './password.ts'
export { USER_CHANGES_CHANNEL, usersRepository, type UserChanges } from './repository.ts'
export { createRoleCache, type RoleCache } from './role-cache.ts'
export { isAdmin, viewerOf } from './viewer.ts'
export { checkSavedQuotas, effectiveQuotas, MAX_QUOTA, QUOTA_NAMES, type QuotaName, type Quotas } from './quotas.ts'
