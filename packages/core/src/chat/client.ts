import type { Readable } from 'node:stream'
import { Agent, Pool } from 'undici'
import { isPlatformUserId } from './phone.ts'

/** The platform's error envelope (`{"error": {...}}`), kept whole so callers can branch on `code`. */
export class ChatPlatformError extends Error {
  override name = 'ChatPlatformError'
  readonly httpStatus: number
  readonly code: number
  readonly subcode?: number
  readonly type?: string
  /** `error_data.details`: the platform's explanation, e.g. which template was missing. */
  readonly details?: string
  /** `error_user_title` and `error_user_msg`: what the Graph API says to a person, e.g. why a template was refused. */
  readonly userTitle?: string
  readonly userMessage?: string
  readonly fbtraceId?: string

  constructor (httpStatus: number, error: PlatformErrorBody) {
    super(error.message ?? `Chat platform error ${String(error.code)}`)
    this.httpStatus = httpStatus
    this.code = typeof error.code === 'number' ? error.code : Number(error.code)
    this.subcode = error.error_subcode
    this.type = error.type
    this.details = error.error_data?.details
    this.userTitle = error.error_user_title
    this.userMessage = error.error_user_msg
    this.fbtraceId = error.fbtrace_id
  }
}

/** The platform could not be reached, timed out, or answered something that is not the API. */
export class ChatPlatformUnavailableError extends Error {
  override name = 'ChatPlatformUnavailableError'
  /** The status of an answer that was not the API's; undefined when none came (unreachable, timed out). */
  readonly httpStatus?: number

  constructor (message: string, options: { httpStatus?: number, cause?: unknown } = {}) {
    super(message, { cause: options.cause })
    this.httpStatus = options.httpStatus
  }
}

interface PlatformErrorBody {
  message?: string
  type?: string
  code?: number | string
  error_subcode?: number
  error_data?: { details?: string }
  error_user_title?: string
  error_user_msg?: string
  fbtrace_id?: string
}

/** The platform's send result, passed through to the caller unchanged (README, Chat). */
export interface SendResult {
  messaging_product: string
  /** `wa_id` for a send `to` a phone, `user_id` for one to a platform user id (README, Customers known by username). */
  contacts?: Array<{ input: string, wa_id?: string, user_id?: string }>
  messages: Array<{ id: string, message_status?: string }>
  [key: string]: unknown
}

export interface TemplateRecord {
  id: string
  name: string
  language: string
  status: string
  category?: string
  components?: unknown[]
  [key: string]: unknown
}

/** `POST /{business-account-id}/message_templates`: the template's id, its status (PENDING while reviewed) and the category it was given. */
export interface CreatedTemplate {
  id: string
  status: string
  category: string
}

/**
 * Whom a message goes to on the wire: `to` (a phone), or `recipient` (a platform user id) when the
 * customer's phone is withheld (README, Customers known by username).
 */
type WireAddress = { to: string, recipient?: never } | { recipient: string, to?: never }

/** `address`: a phone or a platform user id (chat/phone.ts `normalizeAddress`). */
const wireAddress = (address: string): WireAddress => isPlatformUserId(address) ? { recipient: address } : { to: address }

/** The address a built message goes to, whichever field carries it. */
export const addressOfMessage = (message: WireAddress): string => message.to ?? message.recipient

type TextMessage = WireAddress & {
  messaging_product: 'whatsapp'
  recipient_type: 'individual'
  type: 'text'
  text: { preview_url: boolean, body: string }
  context?: { message_id: string }
}

type TemplateMessage = WireAddress & {
  messaging_product: 'whatsapp'
  type: 'template'
  template: { name: string, language: { code: string }, components?: unknown[] }
}

/** The platform's media message types: the message's `type` and the key of its media object. */
export const MEDIA_KINDS = ['image', 'document', 'audio', 'video', 'sticker'] as const
export type MediaKind = typeof MEDIA_KINDS[number]

/** Bounds of a media send's fields (chat/media.ts checks them): the platform's caption limit, and ours for the rest. */
export const MEDIA_LIMITS = { mediaId: 256, link: 2048, caption: 1024, filename: 240 } as const

/** A media send: the platform's media id or a public https link (the platform fetches it), and what goes with it. */
export interface MediaContent {
  kind: MediaKind
  mediaId?: string
  link?: string
  caption?: string
  /** Documents only: the name the customer sees. */
  filename?: string
}

type MediaMessage = WireAddress & {
  messaging_product: 'whatsapp'
  recipient_type: 'individual'
  type: MediaKind
  [kind: string]: unknown
}

export type FlowAction = 'navigate' | 'data_exchange'

/** A flow to open (README, Flows): the platform's flow by id or name, its button, and where it starts. */
export interface FlowContent {
  id?: string
  name?: string
  cta: string
  action: FlowAction
  screen?: string
  data?: Record<string, unknown>
  token?: string
}

/** Reply buttons (1–3), a list of rows in sections (10 rows at most) or a flow: chat/interactive.ts checks the platform's limits. */
export interface InteractiveContent {
  type: 'button' | 'list' | 'flow'
  body: string
  header?: string
  footer?: string
  buttons?: Array<{ id: string, title: string }>
  list?: { button: string, sections: Array<{ title?: string, rows: Array<{ id: string, title: string, description?: string }> }> }
  flow?: FlowContent
}

/** A flow's action in the platform's wire format: version 3, its payload only for a navigate flow that names its screen. */
function flowAction (flow: FlowContent): Record<string, unknown> {
  return {
    name: 'flow',
    parameters: {
      flow_message_version: '3',
      ...(flow.id !== undefined ? { flow_id: flow.id } : { flow_name: flow.name }),
      flow_cta: flow.cta,
      ...(flow.token !== undefined && { flow_token: flow.token }),
      flow_action: flow.action,
      ...(flow.screen !== undefined && { flow_action_payload: { screen: flow.screen, ...(flow.data !== undefined && { data: flow.data }) } })
    }
  }
}

type InteractiveMessage = WireAddress & {
  messaging_product: 'whatsapp'
  recipient_type: 'individual'
  type: 'interactive'
  interactive: Record<string, unknown>
}

/** A location, contact cards or a reaction (README, Message kinds), in the platform's format. */
type KindMessage = WireAddress & {
  messaging_product: 'whatsapp'
  recipient_type: 'individual'
  type: 'location' | 'contacts' | 'reaction'
  [kind: string]: unknown
}

export type OutboundMessage = TextMessage | TemplateMessage | MediaMessage | InteractiveMessage | KindMessage

/** `POST /{phone-number-id}/messages` with `status: read`: the customer's message marked read, with the typing indicator when asked. */
export interface ReadReceipt {
  messaging_product: 'whatsapp'
  status: 'read'
  message_id: string
  typing_indicator?: { type: 'text' }
}

export function locationMessage (to: string, location: { latitude: number, longitude: number, name?: string, address?: string }): KindMessage {
  return { messaging_product: 'whatsapp', recipient_type: 'individual', ...wireAddress(to), type: 'location', location }
}

export function contactsMessage (to: string, contacts: Array<Record<string, unknown>>): KindMessage {
  return { messaging_product: 'whatsapp', recipient_type: 'individual', ...wireAddress(to), type: 'contacts', contacts }
}

/** `emoji` "" removes the business's reaction. */
export function reactionMessage (to: string, wamid: string, emoji: string): KindMessage {
  return { messaging_product: 'whatsapp', recipient_type: 'individual', ...wireAddress(to), type: 'reaction', reaction: { message_id: wamid, emoji } }
}

export function textMessage (to: string, body: string, replyToWamid?: string): TextMessage {
  return {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    ...wireAddress(to),
    type: 'text',
    text: { preview_url: false, body },
    ...(replyToWamid !== undefined && { context: { message_id: replyToWamid } })
  }
}

export function templateMessage (to: string, name: string, languageCode: string, components?: unknown[]): TemplateMessage {
  return {
    messaging_product: 'whatsapp',
    ...wireAddress(to),
    type: 'template',
    template: { name, language: { code: languageCode }, ...(components !== undefined && components.length > 0 && { components }) }
  }
}

export function mediaMessage (to: string, media: MediaContent): MediaMessage {
  return {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    ...wireAddress(to),
    type: media.kind,
    [media.kind]: {
      ...(media.mediaId !== undefined ? { id: media.mediaId } : { link: media.link }),
      ...(media.caption !== undefined && { caption: media.caption }),
      ...(media.filename !== undefined && { filename: media.filename })
    }
  }
}

export function interactiveMessage (to: string, content: InteractiveContent): InteractiveMessage {
  const action = content.type === 'button'
    ? { buttons: (content.buttons ?? []).map((reply) => ({ type: 'reply', reply: { id: reply.id, title: reply.title } })) }
    : content.type === 'flow' && content.flow !== undefined
      ? flowAction(content.flow)
      : { button: content.list?.button, sections: content.list?.sections }
  return {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    ...wireAddress(to),
    type: 'interactive',
    interactive: {
      type: content.type,
      ...(content.header !== undefined && { header: { type: 'text', text: content.header } }),
      body: { text: content.body },
      ...(content.footer !== undefined && { footer: { text: content.footer } }),
      action
    }
  }
}

interface ChatClientOptions {
  /** CHAT_API_URL: the platform base URL including its version, e.g. https://graph.facebook.com/v21.0. */
  apiUrl: string
  /**
   * Deadline of one platform call, connect to last body byte.
   * @defaultValue 10000
   */
  timeoutMs?: number
  /**
   * Sockets kept open to the platform.
   * @defaultValue 50
   */
  connections?: number
}

/** `GET /{phone-number-id}`: the number as the platform knows it, answered only to a token that may use it. */
export interface PhoneNumberRecord {
  id: string
  display_phone_number?: string
  verified_name?: string
  [key: string]: unknown
}

/** `GET /{media-id}`: where the media can be downloaded (for minutes), with its type and size. */
export interface MediaRecord {
  url: string
  mime_type?: string
  sha256?: string
  file_size?: number
  id?: string
  [key: string]: unknown
}

/** A download's answer, its body not read yet: the caller reads or destroys it. */
export interface MediaDownload {
  contentType?: string
  /** Content-Length, when the platform declared one. */
  contentLength?: number
  body: Readable
}

/** What a workflow's send adds to the platform call. */
export interface SendOptions {
  /** Sent as `Idempotency-Key`, the same on every attempt of one send. */
  idempotencyKey?: string
  /** Ends the call early (a cancelled run, a node's time limit). */
  signal?: AbortSignal
}

export interface ChatClient {
  sendMessage: (phoneNumberId: string, accessToken: string, message: OutboundMessage, options?: SendOptions) => Promise<SendResult>
  /** Marks a customer's message read (and shows the typing indicator when the receipt asks): the platform answers `{success: true}`. */
  markRead: (phoneNumberId: string, accessToken: string, receipt: ReadReceipt) => Promise<void>
  getPhoneNumber: (phoneNumberId: string, accessToken: string) => Promise<PhoneNumberRecord>
  /** Every template of the business account, all pages followed. */
  listTemplates: (businessAccountId: string, accessToken: string, query?: { status?: string }) => Promise<TemplateRecord[]>
  /** Submits a template for review; `template` is `{name, language, category, components}` as the platform takes it. */
  createTemplate: (businessAccountId: string, accessToken: string, template: Record<string, unknown>) => Promise<CreatedTemplate>
  /** Deletes the template `name` in every language it has. */
  deleteTemplate: (businessAccountId: string, accessToken: string, name: string) => Promise<void>
  getMedia: (mediaId: string, accessToken: string, signal?: AbortSignal) => Promise<MediaRecord>
  /**
   * The bytes of a media record's `url`, with the same token: only an https URL, or one on
   * CHAT_API_URL's own origin (a test's fake platform), is called, so the token never travels in clear
   * to another host. `signal` bounds the whole download, body included.
   */
  downloadMedia: (url: string, accessToken: string, signal: AbortSignal) => Promise<MediaDownload>
  close: () => Promise<void>
}

// A runaway `next` chain must not loop forever.
const MAX_TEMPLATE_PAGES = 100

/** One pooled keep-alive connection set to the platform's origin, shared by every call. */
export function createChatClient (options: ChatClientOptions): ChatClient {
  const base = new URL(options.apiUrl)
  const basePath = base.pathname.replace(/\/+$/, '')
  const timeoutMs = options.timeoutMs ?? 10_000
  const pool = new Pool(base.origin, {
    connections: options.connections ?? 50,
    connect: { timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs
  })

  // Media are downloaded from the host the platform names (not CHAT_API_URL's): an agent of their own, idle-bounded per read.
  const downloads = new Agent({ connections: options.connections ?? 50, connect: { timeout: timeoutMs }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })

  async function call<T> (method: 'GET' | 'POST' | 'DELETE', path: string, accessToken: string, body?: unknown, options: SendOptions = {}): Promise<T> {
    let statusCode: number
    let text: string
    try {
      const response = await pool.request({
        method,
        path,
        headers: {
          authorization: `Bearer ${accessToken}`,
          accept: 'application/json',
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...(options.idempotencyKey !== undefined && { 'idempotency-key': options.idempotencyKey })
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: options.signal === undefined ? AbortSignal.timeout(timeoutMs) : AbortSignal.any([options.signal, AbortSignal.timeout(timeoutMs)])
      })
      statusCode = response.statusCode
      // Reading the whole body also returns the socket to the pool.
      text = await response.body.text()
    } catch (err) {
      throw new ChatPlatformUnavailableError(`Chat platform request failed: ${(err as Error).message}`, { cause: err })
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      throw new ChatPlatformUnavailableError(`Chat platform answered ${statusCode} with a body that is not JSON`, { httpStatus: statusCode })
    }
    const envelope = (parsed as { error?: PlatformErrorBody } | null)?.error
    if (envelope !== undefined && envelope !== null && typeof envelope === 'object') {
      throw new ChatPlatformError(statusCode, envelope)
    }
    if (statusCode >= 400) {
      throw new ChatPlatformUnavailableError(`Chat platform answered ${statusCode} without an error envelope`, { httpStatus: statusCode })
    }
    return parsed as T
  }

  return {
    async sendMessage (phoneNumberId, accessToken, message, options) {
      return call<SendResult>('POST', `${basePath}/${encodeURIComponent(phoneNumberId)}/messages`, accessToken, message, options)
    },

    async markRead (phoneNumberId, accessToken, receipt) {
      await call('POST', `${basePath}/${encodeURIComponent(phoneNumberId)}/messages`, accessToken, receipt)
    },

    async getPhoneNumber (phoneNumberId, accessToken) {
      return call<PhoneNumberRecord>('GET', `${basePath}/${encodeURIComponent(phoneNumberId)}?fields=display_phone_number,verified_name`, accessToken)
    },

    async listTemplates (businessAccountId, accessToken, query = {}) {
      const search = new URLSearchParams({ limit: '100', ...(query.status !== undefined && { status: query.status }) })
      let path: string | undefined = `${basePath}/${encodeURIComponent(businessAccountId)}/message_templates?${search.toString()}`
      const templates: TemplateRecord[] = []
      for (let page = 0; path !== undefined && page < MAX_TEMPLATE_PAGES; page++) {
        const result: { data?: TemplateRecord[], paging?: { next?: string } } =
          await call('GET', path, accessToken)
        templates.push(...(result.data ?? []))
        path = nextPath(result.paging?.next, base.origin)
      }
      return templates
    },

    async createTemplate (businessAccountId, accessToken, template) {
      return call<CreatedTemplate>('POST', `${basePath}/${encodeURIComponent(businessAccountId)}/message_templates`, accessToken, template)
    },

    async deleteTemplate (businessAccountId, accessToken, name) {
      const search = new URLSearchParams({ name })
      await call('DELETE', `${basePath}/${encodeURIComponent(businessAccountId)}/message_templates?${search.toString()}`, accessToken)
    },

    async getMedia (mediaId, accessToken, signal) {
      return call<MediaRecord>('GET', `${basePath}/${encodeURIComponent(mediaId)}`, accessToken, undefined, { signal })
    },

    async downloadMedia (url, accessToken, signal) {
      let target: URL
      try {
        target = new URL(url)
      } catch {
        throw new ChatPlatformUnavailableError('Chat platform named a media URL that is not a URL')
      }
      if (target.protocol !== 'https:' && target.origin !== base.origin) {
        throw new ChatPlatformUnavailableError(`Chat platform named a media URL that is not https (${target.origin})`)
      }
      let response
      try {
        response = await downloads.request({
          origin: target.origin,
          method: 'GET',
          path: `${target.pathname}${target.search}`,
          headers: { authorization: `Bearer ${accessToken}` },
          signal
        })
      } catch (err) {
        throw new ChatPlatformUnavailableError(`Chat platform media download failed: ${(err as Error).message}`, { cause: err })
      }
      if (response.statusCode >= 400) {
        response.body.destroy()
        throw new ChatPlatformUnavailableError(`Chat platform media download answered ${response.statusCode}`, { httpStatus: response.statusCode })
      }
      const header = (name: string): string | undefined => {
        const value = response.headers[name]
        return Array.isArray(value) ? value[0] : value
      }
      const length = Number(header('content-length'))
      return {
        contentType: header('content-type'),
        ...(Number.isSafeInteger(length) && length >= 0 && { contentLength: length }),
        body: response.body
      }
    },

    async close () {
      await Promise.all([pool.close(), downloads.close()])
    }
  }
}

/** `paging.next` is an absolute URL; only one on the platform's own origin is followed (the token goes with it). */
function nextPath (next: string | undefined, origin: string): string | undefined {
  if (next === undefined || next === '') return undefined
  let url: URL
  try {
    url = new URL(next)
  } catch {
    return undefined
  }
  return url.origin === origin ? `${url.pathname}${url.search}` : undefined
}
