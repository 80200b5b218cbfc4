import { createHmac, getHashes, timingSafeEqual } from 'node:crypto'
import { getPath } from '../template.ts'
import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { hmacSecret, optionalString, requiredString } from './config.ts'
import { defineNode, oneOfAnyCase, PURE_TRAITS, templated } from './definition.ts'

const ALGORITHMS = ['sha1', 'sha256', 'sha384', 'sha512'].filter((name) => getHashes().includes(name))
const ENCODINGS = ['hex', 'base64'] as const
type Encoding = typeof ENCODINGS[number]

const INVALID_SIGNATURE = 'Invalid signature'

function decode (text: string, encoding: Encoding): Buffer | undefined {
  const valid = encoding === 'hex' ? /^[0-9a-fA-F]*$/.test(text) && text.length % 2 === 0 : /^[A-Za-z0-9+/_-]*={0,2}$/.test(text)
  return valid ? Buffer.from(text, encoding) : undefined
}

/**
 * An HMAC of the inbound webhook's exact bytes compared, in constant time, with
 * a request header. Any mismatch fails the run with `Invalid signature`.
 * The secret is `secret`, or the hmac credential named by `credential`.
 */
export const verifySignature = defineNode({
  type: 'verify_signature',
  category: 'HTTP',
  description: 'Checks the HMAC signature of the inbound webhook that started the run; a mismatch fails the run.',
  config: {
    header: templated(Type.String({ minLength: 1, maxLength: 256, description: 'The request header that carries the signature.' })),
    secret: Type.Optional(templated(Type.String({ minLength: 1, description: 'The shared secret; better: credential.' }))),
    credential: Type.Optional(Type.String({ minLength: 1, description: 'The name of an hmac credential holding the secret.' })),
    algorithm: Type.Optional(templated(oneOfAnyCase(ALGORITHMS, { default: 'sha256', description: 'The HMAC hash.' }))),
    encoding: Type.Optional(templated(oneOfAnyCase(ENCODINGS, { default: 'hex', description: 'How the signature is written.' }))),
    prefix: Type.Optional(templated(Type.String({ maxLength: 64, description: 'Text before the signature in the header (sha256=).' })))
  },
  example: { secret: 'replace-me', header: 'x-signature', algorithm: 'sha256', encoding: 'hex', prefix: 'sha256=' },
  traits: {
    ...PURE_TRAITS,
    credentials: { fields: ['credential', 'secret'], types: ['hmac'] },
    secretFields: [{ field: 'secret', kind: 'value' }]
  },
  async execute ({ config, run, log, credential }) {
    const secret = credential === undefined ? requiredString(config, 'secret') : hmacSecret(credential, 'verify_signature')
    const header = requiredString(config, 'header').toLowerCase()
    const algorithm = (optionalString(config, 'algorithm') ?? 'sha256').toLowerCase()
    if (!ALGORITHMS.includes(algorithm)) throw new NodeError(`algorithm must be one of ${ALGORITHMS.join(', ')}`)
    const encoding = (optionalString(config, 'encoding') ?? 'hex').toLowerCase()
    if (encoding !== 'hex' && encoding !== 'base64') throw new NodeError(`encoding must be one of ${ENCODINGS.join(', ')}`)
    const prefix = optionalString(config, 'prefix') ?? ''

    if (run.rawBody === null) {
      log('WARN', 'No request body to verify: the run was not started by an inbound webhook')
      throw new NodeError(INVALID_SIGNATURE)
    }
    const headers = getPath(run.triggerData, 'headers')
    const received = headers !== null && typeof headers === 'object' && Object.hasOwn(headers, header)
      ? (headers as Record<string, unknown>)[header]
      : undefined
    if (typeof received !== 'string' || !received.startsWith(prefix)) {
      log('WARN', `Header ${header} is missing or does not start with the prefix`)
      throw new NodeError(INVALID_SIGNATURE)
    }
    const expected = createHmac(algorithm, secret).update(run.rawBody).digest()
    const signature = decode(received.slice(prefix.length).trim(), encoding)
    if (signature === undefined || signature.length !== expected.length || !timingSafeEqual(signature, expected)) {
      throw new NodeError(INVALID_SIGNATURE)
    }
    return { output: { valid: true } }
  }
})
