import { randomBytes } from 'node:crypto'
import { configOrExit } from '../config.ts'
import { createDatabase } from '../db/client.ts'
import { PASSWORD_LENGTH } from '../users/password.ts'
import { usersRepository } from '../users/repository.ts'

/**
 * `pnpm users:reset-password <email> [--password-stdin]`: for when nobody can sign in (README,
 * Authentication). Sets a new password on the user of DATABASE_URL, read from stdin with
 * `--password-stdin` (as `docker login` reads one) or else generated and printed once, and
 * ends every token issued before it, on every api replica (the change is announced as the
 * routes' are). A configuration error is the one line and exit code 78 of every entry point
 * (`configOrExit`); any other failure is one line on stderr and exit code 1.
 */
const USAGE = 'usage: pnpm users:reset-password <email> [--password-stdin]'
/** stdin read at most: a password is at most PASSWORD_LENGTH.max characters of up to 4 bytes. */
const MAX_STDIN_BYTES = PASSWORD_LENGTH.max * 4 + 2

async function passwordFromStdin (): Promise<string> {
  const chunks: Buffer[] = []
  let bytes = 0
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    bytes += chunk.length
    if (bytes > MAX_STDIN_BYTES) throw new Error(`the password on stdin must be ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters`)
    chunks.push(chunk)
  }
  // `echo` and here-strings end it with a newline, which is not part of the password.
  const password = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '')
  if (password.length < PASSWORD_LENGTH.min || password.length > PASSWORD_LENGTH.max) {
    throw new Error(`the password on stdin must be ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters`)
  }
  return password
}

/** 24 characters of base64url: 144 random bits. */
const generatedPassword = (): string => randomBytes(18).toString('base64url')

async function reset (args: string[]): Promise<string> {
  const fromStdin = args.includes('--password-stdin')
  const rest = args.filter((arg) => arg !== '--password-stdin')
  const [email] = rest
  if (rest.length !== 1 || email === undefined || email.startsWith('-')) throw new Error(USAGE)
  const password = fromStdin ? await passwordFromStdin() : generatedPassword()
  const config = configOrExit('reset-password')
  const database = createDatabase(config.databaseUrl, { max: 1, poolMode: config.databasePoolMode })
  try {
    const users = usersRepository(database.db)
    const user = await users.findByEmail(email)
    if (user === null || await users.setPassword(user.id, password) === null) throw new Error(`no user has the email ${email}`)
    return fromStdin
      ? `Password of ${user.email} reset; every token issued before is ended`
      : `Password of ${user.email} reset; every token issued before is ended. New password (shown once): ${password}`
  } finally {
    await database.close()
  }
}

/** Drizzle wraps the driver's error in `Failed query: <sql>`: the driver's says what went wrong. */
function rootCause (err: unknown): Error {
  let current = err as Error
  while (current.cause instanceof Error) current = current.cause
  return current
}

try {
  process.stdout.write(`${await reset(process.argv.slice(2))}\n`)
} catch (err) {
  process.stderr.write(`users:reset-password: ${rootCause(err).message.split('\n')[0]}\n`)
  process.exitCode = 1
}
