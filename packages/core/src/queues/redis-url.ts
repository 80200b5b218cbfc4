import ipaddr from 'ipaddr.js'

/** A seed node of a Redis Cluster: the client learns the others (and the slots) from it. */
export interface RedisClusterNode {
  host: string
  port: number
}

/** A Redis Cluster as `redis+cluster://` (or `rediss+cluster://`, TLS) names it. */
export interface RedisClusterAddress {
  nodes: RedisClusterNode[]
  username?: string
  password?: string
  tls: boolean
}

/** Seed nodes one setting may list: a few are enough, the client discovers the rest. */
const MAX_CLUSTER_SEED_NODES = 64

/** What is wrong with a Redis address; the configuration names the setting it came from. */
export class RedisAddressError extends Error {
  override name = 'RedisAddressError'
}

const CLUSTER_SCHEME = /^(rediss?)\+cluster:\/\//i
const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/

function parseNode (entry: string): RedisClusterNode {
  const match = /^(\[[^\]]+\]|[^:[\]]+):([0-9]{1,5})$/.exec(entry)
  const port = Number(match?.[2])
  if (match === null || port < 1 || port > 65535) {
    throw new RedisAddressError(`node "${entry}" must be host:port with a port from 1 to 65535`)
  }
  const host = match[1]
  if (host.startsWith('[')) {
    const address = host.slice(1, -1)
    if (!ipaddr.IPv6.isValid(address)) throw new RedisAddressError(`node "${entry}" has an invalid IPv6 address`)
    return { host: address, port }
  }
  if (!HOSTNAME.test(host)) throw new RedisAddressError(`node "${entry}" has an invalid host`)
  return { host, port }
}

/** `host:port,host:port` (IPv6 as `[::1]:7000`): the seed nodes of a cluster. */
export function parseClusterNodes (list: string): RedisClusterNode[] {
  const entries = list.split(',').map((entry) => entry.trim())
  if (entries.length > MAX_CLUSTER_SEED_NODES) {
    throw new RedisAddressError(`lists ${entries.length} nodes; at most ${MAX_CLUSTER_SEED_NODES}`)
  }
  return entries.map(parseNode)
}

export function isClusterUrl (url: string): boolean {
  return CLUSTER_SCHEME.test(url)
}

/**
 * `redis+cluster://[user[:password]@]host:port[,host:port…]`, or `rediss+cluster://` for TLS.
 * A cluster has only database 0 and takes no options here, so nothing may follow the nodes.
 */
export function parseClusterUrl (url: string): RedisClusterAddress {
  const scheme = CLUSTER_SCHEME.exec(url)
  if (scheme === null) throw new RedisAddressError('must start with redis+cluster:// or rediss+cluster://')
  let rest = url.slice(scheme[0].length).replace(/\/$/, '')
  let username: string | undefined
  let password: string | undefined
  const at = rest.lastIndexOf('@')
  if (at >= 0) {
    const [user = '', ...secret] = rest.slice(0, at).split(':')
    try {
      username = user === '' ? undefined : decodeURIComponent(user)
      password = secret.length === 0 ? undefined : decodeURIComponent(secret.join(':'))
    } catch {
      throw new RedisAddressError('has credentials that are not URL-encoded')
    }
    rest = rest.slice(at + 1)
  }
  if (/[/?#]/.test(rest)) throw new RedisAddressError('must end after its nodes (a cluster has no database number or options)')
  if (rest === '') throw new RedisAddressError('names no node')
  return { nodes: parseClusterNodes(rest), username, password, tls: scheme[1].toLowerCase() === 'rediss' }
}

/** The URL form of a list of seed nodes (what REDIS_CLUSTER_NODES becomes). */
export function clusterUrl (nodes: RedisClusterNode[]): string {
  const hosts = nodes.map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`)
  return `redis+cluster://${hosts.join(',')}`
}
