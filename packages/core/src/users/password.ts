import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'

/** Every password a user is given, at creation, change or reset (README, Authentication). */
export const PASSWORD_LENGTH = { min: 8, max: 1024 }

const KEY_LENGTH = 64
const PARAMS: ScryptOptions = { N: 16384, r: 8, p: 1 }

function derive (password: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, PARAMS, (err, key) => { err ? reject(err) : resolve(key) })
  })
}

/** `scrypt$N$r$p$salt$hash`, so parameters can be raised later without breaking stored hashes. */
export async function hashPassword (password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt)
  return `scrypt$${PARAMS.N}$${PARAMS.r}$${PARAMS.p}$${salt.toString('base64')}$${key.toString('base64')}`
}

export async function verifyPassword (password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$')
  if (scheme !== 'scrypt' || salt === undefined || hash === undefined) return false
  const expected = Buffer.from(hash, 'base64')
  const key = await new Promise<Buffer>((resolve, reject) => {
    scrypt(password.normalize('NFKC'), Buffer.from(salt, 'base64'), expected.length, { N: Number(n), r: Number(r), p: Number(p) }, (err, k) => { err ? reject(err) : resolve(k) })
  })
  return timingSafeEqual(key, expected)
}

/** A valid hash of nothing, compared against when the user is unknown so that timing does not reveal it. */
export const DUMMY_PASSWORD_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$' + Buffer.alloc(KEY_LENGTH).toString('base64')
