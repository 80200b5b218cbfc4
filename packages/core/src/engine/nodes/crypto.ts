import { createHash, createHmac, getHashes, randomBytes } from 'node:crypto'
import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { hmacSecret, optionalChoice, optionalNumber, requiredChoice } from './config.ts'
import { defineNode, oneOfAnyCase, PURE_TRAITS, templated } from './definition.ts'

const OPERATIONS = ['hash', 'hmac', 'randomId'] as const
/** What the running Node offers of these (a FIPS build has no md5). */
const HASHES = ['sha1', 'sha256', 'sha384', 'sha512', 'md5'].filter((name) => getHashes().includes(name))
const HMAC_HASHES = HASHES.filter((name) => name !== 'md5')
const ENCODINGS = ['hex', 'base64', 'base64url'] as const
const VALUE_MAX_BYTES = 1024 * 1024
const ID_MIN_LENGTH = 8
const ID_MAX_LENGTH = 64
const ID_DEFAULT_LENGTH = 24
const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
/** The largest multiple of the alphabet's size in a byte: bytes from it up are drawn again, so every character is as likely. */
const ID_BYTE_LIMIT = 256 - (256 % ID_ALPHABET.length)

/** The bytes hashed: text as UTF-8, any other value as its JSON text. */
function bytesOf (value: unknown, operation: string): Buffer {
  if (value === undefined || value === null) throw new NodeError(`value is required to ${operation}`)
  const bytes = Buffer.from(typeof value === 'string' ? value : JSON.stringify(value), 'utf8')
  if (bytes.length > VALUE_MAX_BYTES) throw new NodeError(`value is ${bytes.length} bytes, more than ${VALUE_MAX_BYTES}`)
  return bytes
}

/** Letters and digits from crypto.randomBytes, each as likely as the others. */
function randomId (length: number): string {
  let id = ''
  while (id.length < length) {
    for (const byte of randomBytes(length)) {
      if (byte < ID_BYTE_LIMIT && id.length < length) id += ID_ALPHABET[byte % ID_ALPHABET.length]
    }
  }
  return id
}

/**
 * Digests and random ids. An HMAC's key is an hmac credential's `secret`, never written in the
 * workflow (README, Credentials). `randomId` differs each time the node runs, a run taken over
 * after a crash included; it is still pure: its output is checkpointed before any outside effect
 * uses it (the `pure` trait, ./definition.ts).
 */
export const cryptoNode = defineNode({
  type: 'crypto',
  category: 'Data',
  description: 'Hashes a value, signs it with HMAC using an hmac credential, or makes a random id.',
  config: {
    operation: templated(oneOfAnyCase(OPERATIONS, { description: 'hash: a digest of value; hmac: its HMAC with credential’s secret; randomId: random letters and digits.' })),
    value: Type.Optional(Type.Unknown({ description: 'For hash and hmac: text (as UTF-8) or any JSON value (as its JSON text), at most 1 MiB.' })),
    algorithm: Type.Optional(templated(oneOfAnyCase(HASHES, { default: 'sha256', description: 'The hash (md5 for hash only).' }))),
    encoding: Type.Optional(templated(oneOfAnyCase(ENCODINGS, { default: 'hex', description: 'How the digest is written.' }))),
    credential: Type.Optional(Type.String({ minLength: 1, description: 'For hmac: the name of an hmac credential, whose secret is the key.' })),
    length: Type.Optional(templated(Type.Integer({ minimum: ID_MIN_LENGTH, maximum: ID_MAX_LENGTH, default: ID_DEFAULT_LENGTH, description: 'For randomId: its length.' })))
  },
  example: { operation: 'hash', value: '{{triggerData.email}}', algorithm: 'sha256', encoding: 'hex' },
  traits: { ...PURE_TRAITS, credentials: { fields: ['credential'], types: ['hmac'] } },
  validate (config) {
    const { operation, algorithm, credential } = config
    if (typeof operation !== 'string' || operation.toLowerCase() !== 'hmac') return
    if (typeof algorithm === 'string' && algorithm.toLowerCase() === 'md5') throw new Error(`algorithm md5 is for hash only: hmac takes ${HMAC_HASHES.join(', ')}`)
    if (credential === undefined || credential === null) throw new Error('credential is required for hmac: the name of an hmac credential')
  },
  async execute ({ config, credential }) {
    const operation = requiredChoice(config, 'operation', OPERATIONS)
    if (operation === 'randomId') {
      const length = optionalNumber(config, 'length', ID_MIN_LENGTH, ID_MAX_LENGTH) ?? ID_DEFAULT_LENGTH
      if (!Number.isInteger(length)) throw new NodeError(`length must be a whole number from ${ID_MIN_LENGTH} to ${ID_MAX_LENGTH}`)
      return { output: { value: randomId(length) } }
    }
    const bytes = bytesOf(config.value, operation)
    const encoding = optionalChoice(config, 'encoding', ENCODINGS) ?? 'hex'
    if (operation === 'hash') {
      const algorithm = optionalChoice(config, 'algorithm', HASHES) ?? 'sha256'
      return { output: { value: createHash(algorithm).update(bytes).digest(encoding) } }
    }
    const algorithm = optionalChoice(config, 'algorithm', HMAC_HASHES) ?? 'sha256'
    if (credential === undefined) throw new NodeError('credential is required for hmac: the name of an hmac credential')
    return { output: { value: createHmac(algorithm, hmacSecret(credential, 'crypto')).update(bytes).digest(encoding) } }
  }
})
