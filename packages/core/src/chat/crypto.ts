import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'

const ALGORITHM = 'aes-256-gcm'
const VERSION = 'v1'

/**
 * Encrypts a secret for storage (AES-256-GCM, random 96-bit nonce).
 * The format `v1.<iv>.<tag>.<ciphertext>` (base64url) leaves room for key rotation.
 */
export function encryptSecret (key: Buffer, plaintext: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv(ALGORITHM, key, iv)
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return [VERSION, iv, cipher.getAuthTag(), ciphertext]
    .map((part) => typeof part === 'string' ? part : part.toString('base64url'))
    .join('.')
}

/** Throws when the value was not produced by encryptSecret with this key. */
export function decryptSecret (key: Buffer, stored: string): string {
  const [version, iv, tag, ciphertext] = stored.split('.')
  if (version !== VERSION || iv === undefined || tag === undefined || ciphertext === undefined) {
    throw new Error('Unrecognised encrypted secret format')
  }
  const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(iv, 'base64url'))
  decipher.setAuthTag(Buffer.from(tag, 'base64url'))
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8')
}
