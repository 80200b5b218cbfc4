import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** openssl makes a CA and a certificate in well under this. */
const OPENSSL_TIMEOUT_MS = 20_000

/**
 * A throwaway CA and a server certificate it signed, in `dir`, as PEM files: for the names in
 * `altNames` (subjectAltName entries: `IP:127.0.0.1`, `DNS:localhost`). Needs openssl on PATH.
 */
export async function makeCertificates (dir: string, altNames = ['IP:127.0.0.1', 'DNS:localhost']): Promise<{ ca: string, cert: string, key: string }> {
  const file = (name: string): string => join(dir, name)
  const openssl = async (...args: string[]): Promise<void> => { await run('openssl', args, { timeout: OPENSSL_TIMEOUT_MS }) }
  await openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=switchboard test CA', '-keyout', file('ca.key'), '-out', file('ca.crt'))
  await openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=switchboard test server', '-keyout', file('node.key'), '-out', file('node.csr'))
  await writeFile(file('node.ext'), `subjectAltName=${altNames.join(',')}\n`)
  await openssl('x509', '-req', '-in', file('node.csr'), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '1', '-extfile', file('node.ext'), '-out', file('node.crt'))
  return { ca: file('ca.crt'), cert: file('node.crt'), key: file('node.key') }
}
