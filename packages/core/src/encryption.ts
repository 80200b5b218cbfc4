import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import type { Config } from './config.ts'

/**
 * Secrets at rest (chat account tokens, credentials): AES-256-GCM with a random 96-bit nonce,
 * stored as `v2.<key id>.<iv>.<tag>.<ciphertext>` (base64url). The key id is a fingerprint of
 * the key, so a value names the key that decrypts it and a rotation can tell which values
 * still need re-encrypting. Values written before key ids (`v1.<iv>.<tag>.<ciphertext>`) are
 * decrypted by trying each known key: the GCM tag tells the right one.
 */

const ALGORITHM = 'aes-256-gcm'
const CURRENT_FORMAT = 'v2'
const LEGACY_FORMAT = 'v1'

interface EncryptionKey {
  id: string
  key: Buffer
}

/** ENCRYPTION_KEY encrypts; it and ENCRYPTION_KEYS_PREVIOUS decrypt. */
export interface Keyring {
  current: EncryptionKey
  /** Every key that may decrypt, the current one first. */
  all: EncryptionKey[]
}

/** Not secret: 8 bytes of a hash of the key, which cannot give the key back. */
const keyId = (key: Buffer): string => createHash('sha256').update('switchboard-encryption-key:').update(key).digest().subarray(0, 8).toString('base64url')

/** The keys of the configuration; build it once per process part, not per value. */
export function keyringOf (config: Pick<Config, 'encryptionKey' | 'encryptionKeysPrevious'>): Keyring {
  const all = [config.encryptionKey, ...config.encryptionKeysPrevious].map((key) => ({ id: keyId(key), key }))
  return { current: all[0]!, all }
}

/** Thrown when a stored value cannot be decrypted with any configured key; it never quotes the value. */
export class DecryptionError extends Error {
  override name = 'DecryptionError'
}

export function encryptSecret (keyring: Keyring, plaintext: string): string {
  const { id, key } = keyring.current
  const iv = randomBytes(12)
  const cipher = createCipheriv(ALGORITHM, key, iv)
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return [CURRENT_FORMAT, id, ...[iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'))].join('.')
}

function decryptWith (key: Buffer, iv: string, tag: string, ciphertext: string): string {
  const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(iv, 'base64url'))
  decipher.setAuthTag(Buffer.from(tag, 'base64url'))
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8')
}

export function decryptSecret (keyring: Keyring, stored: string): string {
  const parts = stored.split('.')
  if (parts[0] === CURRENT_FORMAT && parts.length === 5) {
    const [, id, iv, tag, ciphertext] = parts as [string, string, string, string, string]
    const entry = keyring.all.find((candidate) => candidate.id === id)
    if (entry === undefined) throw new DecryptionError(`Encrypted with key ${id}, which is neither ENCRYPTION_KEY nor in ENCRYPTION_KEYS_PREVIOUS`)
    try {
      return decryptWith(entry.key, iv, tag, ciphertext)
    } catch {
      throw new DecryptionError(`Encrypted value does not decrypt with key ${id}: it was altered`)
    }
  }
  if (parts[0] === LEGACY_FORMAT && parts.length === 4) {
    const [, iv, tag, ciphertext] = parts as [string, string, string, string]
    for (const { key } of keyring.all) {
      try {
        return decryptWith(key, iv, tag, ciphertext)
      } catch {
        // Not this key: the tag did not verify.
      }
    }
    throw new DecryptionError('Encrypted value does not decrypt with ENCRYPTION_KEY or any of ENCRYPTION_KEYS_PREVIOUS')
  }
  throw new DecryptionError('Unrecognised encrypted secret format')
}

/** How every value `encryptSecret` writes with this keyring begins: a rotation leaves such values alone. */
export const currentKeyPrefix = (keyring: Keyring): string => `${CURRENT_FORMAT}.${keyring.current.id}.`
