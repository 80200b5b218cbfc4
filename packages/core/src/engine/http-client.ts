import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'
import { Agent, buildConnector, interceptors, type Dispatcher } from 'undici'

/**
 * Cloud instance metadata endpoints: refused even when private addresses are
 * allowed, because they hand out the machine's credentials.
 */
const METADATA_ADDRESSES = [
  '169.254.169.254', // AWS, GCP, Azure, DigitalOcean, OpenStack
  'fd00:ec2::254', // AWS over IPv6
  '100.100.100.200', // Alibaba Cloud
  '192.0.0.192', // Oracle Cloud (classic)
  '168.63.129.16' // Azure wire server
].map((address) => ipaddr.parse(address))

const METADATA_HOSTNAMES = new Set(['metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data', 'instance-data.ec2.internal'])

export class BlockedAddressError extends Error {
  override name = 'BlockedAddressError'
  readonly code = 'ERR_BLOCKED_ADDRESS'
}

/**
 * Why a request to `address` is refused, or undefined when it is allowed.
 * Without `allowPrivate` only global unicast addresses pass: loopback,
 * private, link-local, unique-local, CGNAT, multicast, reserved and the
 * IPv6 ranges that embed IPv4 addresses (6to4, Teredo, NAT64) are refused.
 */
export function blockedAddressReason (address: string, allowPrivate: boolean): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    // process() turns an IPv4-mapped IPv6 address (::ffff:10.0.0.1) into the IPv4 one.
    parsed = ipaddr.process(address)
  } catch {
    return `Blocked request to invalid address ${address}`
  }
  const normalized = parsed.toNormalizedString()
  if (METADATA_ADDRESSES.some((metadata) => metadata.kind() === parsed.kind() && metadata.toNormalizedString() === normalized)) {
    return `Blocked request to cloud metadata address ${parsed.toString()}`
  }
  if (!allowPrivate && parsed.range() !== 'unicast') return `Blocked request to private address ${parsed.toString()}`
  return undefined
}

/** Resolves `hostname` and returns the address to connect to, after checking every address it resolves to. */
export async function resolveAllowedAddress (hostname: string, allowPrivate: boolean): Promise<string> {
  const name = hostname.toLowerCase().replace(/\.$/, '')
  if (METADATA_HOSTNAMES.has(name)) throw new BlockedAddressError(`Blocked request to cloud metadata host ${name}`)
  const addresses = isIP(name) !== 0 ? [name] : (await lookup(name, { all: true, verbatim: true })).map((entry) => entry.address)
  if (addresses.length === 0) throw new Error(`Could not resolve ${name}`)
  for (const address of addresses) {
    const reason = blockedAddressReason(address, allowPrivate)
    if (reason !== undefined) throw new BlockedAddressError(reason)
  }
  return addresses[0]
}

export interface HttpClientOptions {
  /** HTTP_REQUEST_ALLOW_PRIVATE: loopback and private networks are reachable (metadata stays refused). */
  allowPrivate: boolean
  /** @defaultValue 5 */
  maxRedirections?: number
  /** Connect timeout. @defaultValue 10000 */
  connectTimeoutMs?: number
}

/**
 * The one dispatcher every http_request node shares. The address check runs
 * in the connector on the address actually dialled (no gap for DNS
 * rebinding), so it applies to every redirect hop and every new connection.
 */
export function createHttpClient (options: HttpClientOptions): { dispatcher: Dispatcher, close: () => Promise<void> } {
  const connect = buildConnector({ timeout: options.connectTimeoutMs ?? 10_000 })
  const guardedConnect: buildConnector.connector = (connectOptions, callback) => {
    const { hostname } = connectOptions
    resolveAllowedAddress(hostname, options.allowPrivate).then((address) => {
      connect({
        ...connectOptions,
        hostname: address,
        // TLS still verifies the certificate against the name that was asked for.
        servername: connectOptions.servername ?? (isIP(hostname) === 0 ? hostname : undefined)
      }, callback)
    }, (err: Error) => { callback(err, null) })
  }
  const agent = new Agent({ connect: guardedConnect })
  return {
    dispatcher: agent.compose(interceptors.redirect({ maxRedirections: options.maxRedirections ?? 5 })),
    close: async () => { await agent.close() }
  }
}
