import { createCipheriv, randomBytes } from 'node:crypto'
import t from 'tap'
import { currentKeyPrefix, decryptSecret, DecryptionError, encryptSecret, keyringOf } from '../src/encryption.ts'

const [oldKey, newKey, otherKey] = [randomBytes(32), randomBytes(32), randomBytes(32)]
const keyring = (current: Buffer, ...previous: Buffer[]) => keyringOf({ encryptionKey: current, encryptionKeysPrevious: previous })

t.test('a value names the key that encrypted it, and any keyring holding that key decrypts it', async (t) => {
  const stored = encryptSecret(keyring(oldKey), 'token-1')
  t.ok(stored.startsWith(currentKeyPrefix(keyring(oldKey))))
  t.notOk(stored.startsWith(currentKeyPrefix(keyring(newKey))), 'another key has another id')
  t.not(encryptSecret(keyring(oldKey), 'token-1'), stored, 'a fresh nonce each time')
  t.equal(decryptSecret(keyring(newKey, oldKey), stored), 'token-1', 'a previous key decrypts')
  t.equal(decryptSecret(keyring(oldKey), stored), 'token-1')
})

t.test('values written before key ids (v1) decrypt with whichever configured key made them', async (t) => {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', oldKey, iv)
  const ciphertext = Buffer.concat([cipher.update('legacy', 'utf8'), cipher.final()])
  const legacy = ['v1', ...[iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'))].join('.')
  t.equal(decryptSecret(keyring(newKey, otherKey, oldKey), legacy), 'legacy')
  t.throws(() => decryptSecret(keyring(newKey), legacy), new DecryptionError('Encrypted value does not decrypt with ENCRYPTION_KEY or any of ENCRYPTION_KEYS_PREVIOUS'))
})

t.test('failures say which key is missing or that the value was altered, never the value', async (t) => {
  const stored = encryptSecret(keyring(oldKey), 'secret-value')
  const id = stored.split('.')[1]
  t.throws(() => decryptSecret(keyring(newKey), stored), new DecryptionError(`Encrypted with key ${id}, which is neither ENCRYPTION_KEY nor in ENCRYPTION_KEYS_PREVIOUS`))
  const parts = stored.split('.')
  parts[4] = Buffer.from('tampered').toString('base64url')
  t.throws(() => decryptSecret(keyring(oldKey), parts.join('.')), new DecryptionError(`Encrypted value does not decrypt with key ${id}: it was altered`))
  t.throws(() => decryptSecret(keyring(oldKey), 'plain text'), new DecryptionError('Unrecognised encrypted secret format'))
})
