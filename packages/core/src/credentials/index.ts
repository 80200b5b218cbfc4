/** Credentials: secrets nodes refer to by name, encrypted at rest, redacted from whatever a run stores. */
export { createRedactor, CREDENTIAL_MARKER, MIN_MASKED_LENGTH } from './redaction.ts'
export { credentialsRepository, type CredentialsRepository } from './repository.ts'
export { rotateEncryptionKey } from './rotation.ts'
export { createCredentialService, credentialNotFound, type CredentialService } from './service.ts'
export { createCredentialVault } from './vault.ts'
