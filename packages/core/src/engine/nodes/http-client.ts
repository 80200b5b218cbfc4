import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'
import { Agent, buildConnector, type Dispatcher } from 'undici'

/**
 * Cloud instance metadata and credential endpoints: refused even when private
 * addresses are allowed, because they hand out the machine's credentials.
 * (The IPv4 ones inside 169.254.0.0/16 are refused with all of link-local too;
 * naming them gives the clearer message.)
 */
const METADATA_ADDRESSES = new Set([
  '169.254.169.254', // AWS, GCP, Azure, DigitalOcean, OpenStack, Oracle
  '169.254.170.2', // AWS ECS task credentials
  '169.254.170.23', // AWS EKS Pod Identity
  'fd00:ec2::254', // AWS over IPv6
  'fd00:ec2::23', // AWS EKS Pod Identity over IPv6
  '100.100.100.200', // Alibaba Cloud
  '192.0.0.192', // Oracle Cloud (classic)
  '168.63.129.16' // Azure wire server
].map((address) => ipaddr.parse(address).toNormalizedString()))

const METADATA_HOSTNAMES = new Set(['metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data', 'instance-data.ec2.internal'])

const TEREDO = ipaddr.parseCIDR('2001::/32')

/**
 * IPv6 ranges whose addresses carry an IPv4 address that the packet (or a
 * translator on its way) ends up at. `bytes` lists where the IPv4 address may
 * sit: a local-use NAT64 prefix may be 48 to 96 bits long (RFC 6052 2.2, octet
 * 8 is skipped), so each possible place is checked. IPv4-mapped addresses
 * (::ffff:a.b.c.d) are turned into IPv4 by ipaddr.process() before this.
 */
const IPV4_CARRIERS = [
  { range: ipaddr.parseCIDR('64:ff9b::/96'), bytes: [[12, 13, 14, 15]] }, // NAT64, well-known prefix (RFC 6052)
  { range: ipaddr.parseCIDR('64:ff9b:1::/48'), bytes: [[6, 7, 9, 10], [7, 9, 10, 11], [9, 10, 11, 12], [12, 13, 14, 15]] }, // NAT64, local use (RFC 8215)
  { range: ipaddr.parseCIDR('::/96'), bytes: [[12, 13, 14, 15]] }, // IPv4-compatible (deprecated)
  { range: ipaddr.parseCIDR('::ffff:0:0:0/96'), bytes: [[12, 13, 14, 15]] }, // IPv4-translated (SIIT)
  { range: ipaddr.parseCIDR('2002::/16'), bytes: [[2, 3, 4, 5]] }, // 6to4 relay
  { range: TEREDO, bytes: [[4, 5, 6, 7]] } // Teredo server
]
const [NAT64_WELL_KNOWN] = IPV4_CARRIERS

/** The IPv4 addresses an IPv6 address stands for, with the range that carries them; undefined for a plain IPv6 address. */
function carriedIPv4 (address: ipaddr.IPv6): { carrier: typeof IPV4_CARRIERS[number], addresses: ipaddr.IPv4[] } | undefined {
  const carrier = IPV4_CARRIERS.find(({ range }) => address.match(range))
  if (carrier === undefined) return undefined
  const octets = address.toByteArray()
  const addresses = carrier.bytes.map((indexes) => new ipaddr.IPv4(indexes.map((i) => octets[i]!)))
  // Teredo also carries the client's address, inverted, in the last 32 bits.
  if (carrier.range === TEREDO) addresses.push(new ipaddr.IPv4(octets.slice(12).map((octet) => octet ^ 0xff)))
  return { carrier, addresses }
}

/** Gravest first. */
const BLOCKED_CATEGORIES = ['cloud metadata', 'link-local', 'private'] as const
type BlockedCategory = typeof BLOCKED_CATEGORIES[number]

/**
 * Metadata and link-local addresses (169.254.0.0/16, fe80::/10: where metadata and
 * credential services listen) are always refused, in every form that reaches them.
 * Without `allowPrivate` only global unicast passes; an IPv6 address carrying an IPv4
 * one passes only through the well-known NAT64 prefix, to an IPv4 address that passes.
 */
function blockedCategory (address: ipaddr.IPv4 | ipaddr.IPv6, allowPrivate: boolean): BlockedCategory | undefined {
  if (METADATA_ADDRESSES.has(address.toNormalizedString())) return 'cloud metadata'
  if (address.range() === 'linkLocal') return 'link-local'
  if (address.kind() === 'ipv6') {
    const carried = carriedIPv4(address as ipaddr.IPv6)
    if (carried !== undefined) {
      const categories = new Set(carried.addresses.map((ipv4) => blockedCategory(ipv4, allowPrivate)))
      // The gravest reason wins: a local-use NAT64 address may carry several.
      const category = BLOCKED_CATEGORIES.find((candidate) => categories.has(candidate))
      if (category !== undefined) return category
      return allowPrivate || carried.carrier === NAT64_WELL_KNOWN ? undefined : 'private'
    }
  }
  if (!allowPrivate && address.range() !== 'unicast') return 'private'
  return undefined
}

export class BlockedAddressError extends Error {
  override name = 'BlockedAddressError'
  readonly code = 'ERR_BLOCKED_ADDRESS'

  /** `allowedWithPrivate`: HTTP_REQUEST_ALLOW_PRIVATE would have let the request through. */
  constructor (message: string, readonly allowedWithPrivate = false) {
    super(message)
  }
}

/** What a workflow author reads when the guard refuses an address the operator could allow (README, Configuration). */
export const ALLOW_PRIVATE_HINT = '(HTTP_REQUEST_ALLOW_PRIVATE=true on the worker allows private and loopback addresses)'

function parseAddress (address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  try {
    // process() turns an IPv4-mapped IPv6 address (::ffff:10.0.0.1) into the IPv4 one.
    return ipaddr.process(address)
  } catch {
    return undefined
  }
}

/**
 * Why a request to the IP address `address` is refused, naming it, or undefined
 * when it is allowed. Without `allowPrivate` only global unicast addresses pass:
 * loopback, private, link-local, unique-local, CGNAT, multicast, reserved, and IPv6
 * addresses carrying a refused IPv4 one are refused. Metadata and link-local
 * addresses are refused in any case.
 */
export function blockedAddressReason (address: string, allowPrivate: boolean): string | undefined {
  const parsed = parseAddress(address)
  if (parsed === undefined) return `Blocked request to invalid address ${address}`
  const category = blockedCategory(parsed, allowPrivate)
  return category === undefined ? undefined : `Blocked request to ${category} address ${parsed.toString()}`
}

/**
 * Why a request to `hostname` is refused by what it is, before any name is resolved: a cloud
 * metadata name, or an IP address `blockedAddressReason` refuses; undefined for an allowed address
 * or another name (the connector checks each address a name resolves to, when it connects).
 * For what is checked when it is saved rather than when it is called (event subscriptions).
 */
export function blockedHostReason (hostname: string, allowPrivate: boolean): string | undefined {
  const name = hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '')
  if (METADATA_HOSTNAMES.has(name)) return `Blocked request to cloud metadata host ${name}`
  return isIP(name) === 0 ? undefined : blockedAddressReason(name, allowPrivate)
}

/** Every address a name resolves to (the system resolver by default, as Node's own connections use). */
export type LookupAll = (hostname: string) => Promise<string[]>

const systemLookup: LookupAll = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address)

/**
 * Resolves `hostname` and returns the address to connect to, after checking every
 * address it resolves to. A refused name is not told what it resolved to: that
 * would map the internal network for whoever writes workflows.
 */
export async function resolveAllowedAddress (hostname: string, allowPrivate: boolean, lookupAll: LookupAll = systemLookup): Promise<string> {
  const name = hostname.toLowerCase().replace(/\.$/, '')
  if (METADATA_HOSTNAMES.has(name)) throw new BlockedAddressError(`Blocked request to cloud metadata host ${name}`)
  if (isIP(name) !== 0) {
    const reason = blockedAddressReason(name, allowPrivate)
    if (reason !== undefined) throw new BlockedAddressError(reason, blockedAddressReason(name, true) === undefined)
    return name
  }
  const addresses = await lookupAll(name)
  if (addresses.length === 0) throw new Error(`Could not resolve ${name}`)
  const categoryOf = (address: string, allowed: boolean): BlockedCategory | undefined => {
    const parsed = parseAddress(address)
    return parsed === undefined ? 'private' : blockedCategory(parsed, allowed)
  }
  for (const address of addresses) {
    const category = categoryOf(address, allowPrivate)
    if (category !== undefined) {
      throw new BlockedAddressError(`Blocked request to ${category} address`, addresses.every((each) => categoryOf(each, true) === undefined))
    }
  }
  return addresses[0]!
}

interface HttpClientOptions {
  /** HTTP_REQUEST_ALLOW_PRIVATE: loopback and private networks are reachable (metadata stays refused). */
  allowPrivate: boolean
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
    // No redirect interceptor: the http_request node follows redirects itself, choosing the headers each hop keeps.
    dispatcher: agent,
    close: async () => { await agent.close() }
  }
}
