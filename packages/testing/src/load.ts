import { Agent, request } from 'node:http'

/** What one request of a load got. */
export interface Answer {
  /** The request's number, unique within its load; tests put it in the body to find the run it made. */
  seq: number
  url: string
  sentAt: number
  /** Milliseconds until the answer, or until the sender gave up or lost the connection. */
  ms: number
  /** The HTTP status, when an answer came. */
  status?: number
  body?: any
  /** Why no answer came: the sender gave up, the connection was refused or cut. */
  failure?: 'timeout' | 'refused' | 'reset'
}

interface LoadOptions {
  /** Where request `seq` goes (several apis: alternate). */
  url: (seq: number) => string
  /** Its JSON body. */
  body: (seq: number) => unknown
  /** Headers of every request, or of request `seq`. */
  headers?: Record<string, string> | ((seq: number) => Record<string, string>)
  /** The sender gives up after this long (default 10 s), like a partner's webhook client. */
  giveUpMs?: number
  /** Where request numbers come from (default 0, 1, 2… of this load): loads given one numbering never share a number. */
  numbering?: () => number
}

/** Request numbers 0, 1, 2…, for one load or several sharing them. */
export function numbering (): () => number {
  let next = 0
  return () => next++
}

export interface Load {
  answers: Answer[]
  /** Requests sent whose answer has not come yet. */
  inFlight: () => number
  /** Sends `perSecond` requests a second, without waiting for answers, until `stop`. */
  paced: (perSecond: number) => { stop: () => Promise<void> }
  /** Sends `count` requests, `concurrency` at a time, and resolves when all are answered. */
  burst: (count: number, concurrency: number) => Promise<void>
  /** Resolves when every request sent so far is answered or given up. */
  settled: () => Promise<void>
}

/** The X-Request-Id a load sends with request `seq`. */
export const requestIdOf = (seq: number): string => `load-${seq}`

/** `200 received`, `503`, `timeout`: how answers are counted in a scenario's figures. */
export function answerLabel (answer: Answer): string {
  if (answer.status === undefined) return answer.failure ?? 'none'
  const status = typeof answer.body?.status === 'string' ? ` ${answer.body.status as string}` : ''
  return `${answer.status}${status}`
}

/** One POST over `agent`: its status and text, or why none came. */
async function post (agent: Agent, url: string, headers: Record<string, string>, body: string, giveUpMs: number): Promise<{ status: number, text: string } | { failure: Answer['failure'] }> {
  return await new Promise((resolve) => {
    const req = request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => { resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString() }) })
      res.on('error', () => { resolve({ failure: 'reset' }) })
    })
    let gaveUp = false
    const timer = setTimeout(() => {
      gaveUp = true
      req.destroy()
    }, giveUpMs)
    req.on('error', (err: NodeJS.ErrnoException) => {
      resolve({ failure: gaveUp ? 'timeout' : err.code === 'ECONNREFUSED' ? 'refused' : 'reset' })
    })
    req.on('close', () => { clearTimeout(timer) })
    req.end(body)
  })
}

/**
 * A sender of JSON POSTs that records when and how each one was answered, for tests that
 * break the service under traffic and then check every answer against the runs that exist.
 */
export function createLoad (options: LoadOptions): Load {
  const answers: Answer[] = []
  const pending = new Set<Promise<void>>()
  const giveUpMs = options.giveUpMs ?? 10_000
  const nextSeq = options.numbering ?? numbering()
  // node:http rather than fetch: a tenth of the CPU per request, which the processes under test need more.
  const agent = new Agent({ keepAlive: true, maxSockets: 1000 })
  // Each request carries its number as X-Request-Id, so the api's log lines about it can be found.
  const headersOf = (seq: number): Record<string, string> =>
    ({ 'content-type': 'application/json', 'x-request-id': requestIdOf(seq), ...(typeof options.headers === 'function' ? options.headers(seq) : options.headers) })

  const send = (): Promise<void> => {
    const seq = nextSeq()
    const url = options.url(seq)
    const sentAt = Date.now()
    const request = (async () => {
      const got = await post(agent, url, headersOf(seq), JSON.stringify(options.body(seq)), giveUpMs)
      const ms = Date.now() - sentAt
      if ('failure' in got) {
        answers.push({ seq, url, sentAt, ms, failure: got.failure })
        return
      }
      let body: unknown = got.text
      try { body = JSON.parse(got.text) } catch {}
      answers.push({ seq, url, sentAt, ms, status: got.status, body })
    })()
    pending.add(request)
    request.finally(() => pending.delete(request)).catch(() => {})
    return request
  }

  const settled = async (): Promise<void> => {
    while (pending.size > 0) await Promise.all([...pending])
  }

  return {
    answers,
    inFlight: () => pending.size,
    paced: (perSecond) => {
      const timer = setInterval(() => { send().catch(() => {}) }, 1000 / perSecond)
      return {
        stop: async () => {
          clearInterval(timer)
          await settled()
        }
      }
    },
    burst: async (count, concurrency) => {
      let left = count
      await Promise.all(Array.from({ length: Math.min(count, concurrency) }, async () => {
        while (left-- > 0) await send()
      }))
    },
    settled
  }
}
