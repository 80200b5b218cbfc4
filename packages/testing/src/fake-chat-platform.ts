import { createHash, createHmac, randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import { Readable } from 'node:stream'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'

/**
 * A stand-in for the chat platform (WhatsApp Business Cloud API) that speaks
 * its wire format, as the platform documents it: sends (text, template, media,
 * interactive, location, contacts, reaction) and read receipts with the typing indicator, templates (list, create, delete), media objects and their
 * downloads, and signed webhook deliveries towards our `/webhook/chat`
 * (messages, statuses, template status and quality updates). Tests and the
 * demo mode use it; production never does.
 */

export interface FakeTemplate {
  name: string
  language: string
  /** Body text with positional placeholders `{{1}}`, `{{2}}`; their count is what sends must match. */
  body: string
  status?: string
  category?: string
  /** The platform's id; a listed template without one is numbered by its place in the list. */
  id?: string
  /** A created template's components as submitted; the list shows the others as their body alone. */
  components?: unknown[]
  /** The business account a template was created in: its status webhooks name it. */
  businessAccountId?: string
}

/** What the platform's review did to a template: the `message_template_status_update` webhook's value. */
export interface TemplateStatusSpec {
  name: string
  language: string
  /** APPROVED, REJECTED, PENDING, PAUSED, DISABLED, REINSTATED, FLAGGED, DELETED… */
  event: string
  /** The platform's reason (`INVALID_FORMAT`); `NONE` when unset, as the platform writes an approval's. */
  reason?: string | null
  /** A pause's `other_info`: `{title: FIRST_PAUSE, description}`. */
  otherInfo?: { title: string, description: string }
  /** The entry's id; by default the business account the template was created in. */
  businessAccountId?: string
}

/** A template's new quality score: the `message_template_quality_update` webhook's value. */
export interface TemplateQualitySpec {
  name: string
  language: string
  previous?: string
  quality: 'GREEN' | 'YELLOW' | 'RED' | 'UNKNOWN'
  businessAccountId?: string
}

export interface RecordedRequest {
  method: string
  path: string
  query: Record<string, string>
  headers: Record<string, string | string[] | undefined>
  body: unknown
}

export interface FakeChatPlatformOptions {
  /** Bearer tokens the platform accepts; anything else is error 190. */
  accessTokens?: string[]
  templates?: FakeTemplate[]
  /**
   * The phone number ids each token may use (reading the number, sending from it); a token
   * without an entry may use every number. Others answer error 100 like the platform.
   */
  numbersByToken?: Record<string, string[]>
  /** Test-number mode: only these recipients may be messaged (131030); undefined allows everyone. */
  allowedRecipients?: string[]
  /** Throughput limit per sending number over a sliding second (130429); undefined is unlimited. */
  messagesPerSecond?: number
  /** The pair limit: at most one message from a number to one customer within this many ms (131056); undefined is none. */
  pairIntervalMs?: number
  /** Templates per page of the list, however large a `limit` is asked for. */
  templatePageSize?: number
  /** Listen port; 0 (default) picks a free one. */
  port?: number
  /** Where `POST /_fake/inbound` delivers the customer messages it is given (demo mode); unset, that route answers 404. */
  webhook?: FakeWebhookTarget
  /** Called with each platform request as it is received (the demo mode prints them). */
  onRequest?: (request: RecordedRequest) => void
}

export interface FakeWebhookTarget {
  /** Our `/webhook/chat` URL. */
  url: string
  /** CHAT_APP_SECRET of the service: deliveries are signed with it. */
  appSecret: string
  /** The platform number the messages are addressed to (the service's CHAT_PHONE_NUMBER_ID). */
  phoneNumberId: string
}

/** A media object the platform holds (what a customer sent), served by `GET /{media-id}` and its download URL. */
export interface FakeMedia {
  bytes: Buffer
  mimeType: string
  /**
   * A hostile download, for the bounds of whoever fetches it: `huge` declares 2 GiB and streams
   * zeros until the client goes away, `endless` streams them without a length, `stall` never answers.
   */
  download?: 'huge' | 'endless' | 'stall'
  /** The `file_size` the media's record declares, when it is not the bytes' length. */
  fileSize?: number
}

export interface FakeChatPlatform {
  /** The value for CHAT_API_URL, version segment included. */
  url: string
  /** Every request received, oldest first. */
  requests: RecordedRequest[]
  /** The message sends among them, and the read receipts (`status: read`), which the platform takes on the same path. */
  sends: () => RecordedRequest[]
  /** Holds `media` as the platform does once a customer sent it (or a business uploaded it); returns its media id. */
  addMedia: (media: FakeMedia) => string
  /**
   * The platform's review of a template: its status here (APPROVED makes it sendable and listed as
   * approved), then the signed `message_template_status_update` delivery posted to `options.webhook`.
   * Returns the webhook's answer status.
   */
  reviewTemplate: (spec: TemplateStatusSpec) => Promise<number>
  /** A template's quality score changed: the signed `message_template_quality_update` delivery posted to `options.webhook`. */
  rateTemplate: (spec: TemplateQualitySpec) => Promise<number>
  /** Settings can be changed between tests. */
  options: Required<Omit<FakeChatPlatformOptions, OptionalSetting | 'port' | 'onRequest'>> & Pick<FakeChatPlatformOptions, OptionalSetting>
  close: () => Promise<void>
}

type OptionalSetting = 'allowedRecipients' | 'messagesPerSecond' | 'pairIntervalMs' | 'webhook' | 'numbersByToken'

export const FAKE_ACCESS_TOKEN = 'fake-platform-token'
/** The business account of `fakeChatEnv`'s default account. */
const FAKE_BUSINESS_ACCOUNT_ID = '102290129340398'

/**
 * The settings that point the service's default chat account at a fake platform: its number,
 * and, when deliveries are signed, the app secret (the verify token too when a test needs one).
 */
export const fakeChatEnv = (platform: { url: string }, account: { phoneNumberId: string, appSecret?: string, verifyToken?: string }): Record<string, string> => ({
  CHAT_API_URL: platform.url,
  CHAT_ACCESS_TOKEN: FAKE_ACCESS_TOKEN,
  CHAT_PHONE_NUMBER_ID: account.phoneNumberId,
  CHAT_BUSINESS_ACCOUNT_ID: FAKE_BUSINESS_ACCOUNT_ID,
  ...(account.appSecret !== undefined && { CHAT_APP_SECRET: account.appSecret }),
  ...(account.verifyToken !== undefined && { CHAT_VERIFY_TOKEN: account.verifyToken })
})
export const API_VERSION = 'v21.0'

/** A business-scoped user id: country code, a dot, an optional `ENT.` (a parent id), letters and digits. */
const BSUID = /^[A-Z]{2}\.(?:ENT\.)?[A-Za-z0-9]{1,128}$/

export const DEFAULT_FAKE_TEMPLATES: FakeTemplate[] = [
  { name: 'hello_world', language: 'en_US', body: 'Hello World' },
  { name: 'order_update', language: 'en_US', body: 'Good news {{1}}! Order {{2}} has shipped.' },
  { name: 'order_update', language: 'ar', body: 'أخبار سارة {{1}}! تم شحن الطلب {{2}}.' },
  { name: 'appointment_reminder', language: 'en_US', body: 'Hi {{1}}, see you on {{2}} at {{3}}.' },
  { name: 'welcome', language: 'es', body: 'Bienvenido {{1}}' },
  { name: 'draft_offer', language: 'en_US', body: 'Offer {{1}}', status: 'PENDING' }
]

const ERRORS = {
  token: { status: 401, code: 190, message: 'Invalid OAuth access token - Cannot parse access token', type: 'OAuthException' },
  rate: { status: 429, code: 130429, message: '(#130429) Rate limit hit', type: 'OAuthException' },
  pair: { status: 400, code: 131056, message: '(#131056) (Business Account, Consumer Account) pair rate limit hit', type: 'OAuthException' },
  recipient: { status: 400, code: 131030, message: '(#131030) Recipient phone number not in allowed list', type: 'OAuthException' },
  template: { status: 404, code: 132001, message: '(#132001) Template name does not exist in the translation', type: 'OAuthException', subcode: 2388040 },
  params: { status: 400, code: 132000, message: '(#132000) Number of parameters does not match the expected number of params', type: 'OAuthException', subcode: 2388043 },
  invalid: { status: 400, code: 100, message: '(#100) Invalid parameter', type: 'OAuthException' },
  noAccess: { status: 400, code: 100, message: 'Unsupported request. Object does not exist, cannot be loaded due to missing permissions, or does not support this operation', type: 'GraphMethodException', subcode: 33 },
  // Template management answers as the Graph API does, its explanation in error_user_title and error_user_msg.
  templateExists: { status: 400, code: 100, message: 'Invalid parameter', type: 'OAuthException', subcode: 2388024, userTitle: 'Content in This Language Already Exists' },
  templateNotFound: { status: 400, code: 100, message: 'Invalid parameter', type: 'OAuthException', subcode: 2593002, userTitle: 'Message template not found' }
} as const

type PlatformError = typeof ERRORS[keyof typeof ERRORS]

const TEMPLATE_CATEGORIES = ['MARKETING', 'UTILITY', 'AUTHENTICATION']

/** The status a review event leaves a template in (the platform's list shows it); other events leave it as it was. */
const REVIEW_STATUSES: Record<string, string> = {
  APPROVED: 'APPROVED', REINSTATED: 'APPROVED', PENDING: 'PENDING', REJECTED: 'REJECTED', PAUSED: 'PAUSED', DISABLED: 'DISABLED'
}

const placeholderCount = (text: string): number => new Set(text.match(/\{\{\d+\}\}/g) ?? []).size

/** What a 2 GiB download declares. */
const HUGE_BYTES = 2 ** 31

/** Zeros for as long as the reader reads: a download that never ends. */
const endlessZeros = (): Readable => new Readable({ read () { this.push(Buffer.alloc(64 * 1024)) } })

const MEDIA_TYPES = ['image', 'document', 'audio', 'video', 'sticker']

const isText = (value: unknown, max: number): value is string => typeof value === 'string' && value.length > 0 && value.length <= max

/** Why the platform refuses a media send (error 100), as its `details` say; undefined when it takes it. */
function mediaSendProblem (type: string, media: Record<string, any> | undefined, known: (id: string) => boolean): string | undefined {
  if (typeof media !== 'object' || media === null) return `Param ${type} is required`
  if ((media.id === undefined) === (media.link === undefined)) return `Param ${type} must have exactly one of id or link`
  if (media.id !== undefined && (typeof media.id !== 'string' || !known(media.id))) return `media id (${String(media.id)}) does not exist`
  if (media.link !== undefined && (typeof media.link !== 'string' || !/^https?:\/\//.test(media.link))) return `Param ${type}['link'] must be a URL`
  if (media.caption !== undefined && (type === 'audio' || type === 'sticker' || !isText(media.caption, 1024))) return `Param ${type}['caption'] is not valid`
  if (media.filename !== undefined && (type !== 'document' || !isText(media.filename, 240))) return `Param ${type}['filename'] is not valid`
  return undefined
}

/** Why the platform refuses a flow's action (error 100), by its reference for sending a flow; undefined when it takes it. */
function flowActionProblem (action: Record<string, any>): string | undefined {
  const at = "interactive['action']['parameters']"
  const parameters = action.parameters
  if (action.name !== 'flow') return "Param interactive['action']['name'] must be flow"
  if (typeof parameters !== 'object' || parameters === null) return `Param ${at} is required`
  if (parameters.flow_message_version !== '3') return `Param ${at}['flow_message_version'] must be 3`
  if ((parameters.flow_id === undefined) === (parameters.flow_name === undefined)) return `Param ${at} must have exactly one of flow_id or flow_name`
  if (![parameters.flow_id, parameters.flow_name].some((name) => isText(name, 200))) return `Param ${at}['flow_id'] is not valid`
  if (!isText(parameters.flow_cta, 30) || /\p{Extended_Pictographic}/u.test(parameters.flow_cta)) return `Param ${at}['flow_cta'] must be 1 to 30 characters, no emoji`
  if (parameters.flow_token !== undefined && !isText(parameters.flow_token, 512)) return `Param ${at}['flow_token'] is not valid`
  if (parameters.mode !== undefined && !['draft', 'published'].includes(parameters.mode)) return `Param ${at}['mode'] must be draft or published`
  const flowAction = parameters.flow_action ?? 'navigate'
  if (!['navigate', 'data_exchange'].includes(flowAction)) return `Param ${at}['flow_action'] must be navigate or data_exchange`
  const payload = parameters.flow_action_payload
  if (payload === undefined) return undefined
  if (flowAction !== 'navigate') return `Param ${at}['flow_action_payload'] is only for flow_action navigate`
  if (typeof payload !== 'object' || payload === null || !isText(payload.screen, 100)) return `Param ${at}['flow_action_payload']['screen'] is required`
  const data = payload.data
  if (data !== undefined && (typeof data !== 'object' || data === null || Array.isArray(data) || Object.keys(data).length === 0)) return `Param ${at}['flow_action_payload']['data'] must be a non-empty object`
  return undefined
}

/** Why the platform refuses an interactive send (error 100), by its documented limits; undefined when it takes it. */
function interactiveProblem (interactive: Record<string, any> | undefined): string | undefined {
  if (typeof interactive !== 'object' || interactive === null) return 'Param interactive is required'
  if (!isText(interactive.body?.text, 1024)) return "Param interactive['body']['text'] must be 1 to 1024 characters"
  if (interactive.header !== undefined && (interactive.header.type !== 'text' || !isText(interactive.header.text, 60))) return "Param interactive['header']['text'] must be 1 to 60 characters"
  if (interactive.footer !== undefined && !isText(interactive.footer.text, 60)) return "Param interactive['footer']['text'] must be 1 to 60 characters"
  const action = interactive.action ?? {}
  if (interactive.type === 'button') {
    const buttons: unknown[] = Array.isArray(action.buttons) ? action.buttons : []
    if (buttons.length < 1 || buttons.length > 3) return "Param interactive['action']['buttons'] must have 1 to 3 buttons"
    const ids = buttons.map((button: any) => button?.type === 'reply' && isText(button.reply?.id, 256) && isText(button.reply?.title, 20) ? button.reply.id : undefined)
    if (ids.includes(undefined) || new Set(ids).size !== ids.length) return "Param interactive['action']['buttons'] must be replies with unique ids (256) and titles (20)"
    return undefined
  }
  if (interactive.type === 'list') {
    if (!isText(action.button, 20)) return "Param interactive['action']['button'] must be 1 to 20 characters"
    const sections: any[] = Array.isArray(action.sections) ? action.sections : []
    if (sections.length < 1 || sections.length > 10) return "Param interactive['action']['sections'] must have 1 to 10 sections"
    const rows = sections.flatMap((section) => Array.isArray(section?.rows) ? section.rows : [undefined])
    if (rows.length > 10) return 'Total row count exceed max allowed count: 10'
    if (sections.some((section) => (section.title !== undefined || sections.length > 1) && !isText(section.title, 24))) return "Param interactive['action']['sections'][]['title'] must be 1 to 24 characters"
    const ids = rows.map((row) => isText(row?.id, 200) && isText(row?.title, 24) && (row.description === undefined || isText(row.description, 72)) ? row.id : undefined)
    if (ids.length === 0 || ids.includes(undefined) || new Set(ids).size !== ids.length) return "Param interactive['action']['sections'][]['rows'] must have unique ids (200), titles (24) and descriptions (72)"
    return undefined
  }
  if (interactive.type === 'flow') return flowActionProblem(action)
  return "Param interactive['type'] must be button, list or flow"
}

/** Why the platform refuses a location send (error 100); undefined when it takes it. Degrees may be numbers or numeric strings, as its reference shows. */
function locationProblem (location: Record<string, any> | undefined): string | undefined {
  if (typeof location !== 'object' || location === null) return 'Param location is required'
  for (const [field, bound] of [['latitude', 90], ['longitude', 180]] as const) {
    const value = location[field]
    const degrees = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN
    if (!Number.isFinite(degrees) || Math.abs(degrees) > bound) return `Param location['${field}'] must be a number from -${bound} to ${bound}`
  }
  for (const field of ['name', 'address']) {
    if (location[field] !== undefined && typeof location[field] !== 'string') return `Param location['${field}'] must be a string`
  }
  return undefined
}

/** Why the platform refuses a contacts send (error 100): each card needs `name.formatted_name`; undefined when it takes them. */
function contactsProblem (contacts: unknown): string | undefined {
  if (!Array.isArray(contacts) || contacts.length === 0) return 'Param contacts must be a non-empty array'
  for (const [i, card] of contacts.entries()) {
    if (!isText(card?.name?.formatted_name, 1024)) return `Param contacts[${i}]['name']['formatted_name'] is required`
    for (const list of ['phones', 'emails', 'urls', 'addresses']) {
      if (card[list] !== undefined && !Array.isArray(card[list])) return `Param contacts[${i}]['${list}'] must be an array`
    }
  }
  return undefined
}

/** One emoji (a pictograph with its modifiers and joins, a flag, a keycap), or "" (the business removes its reaction). */
const EMOJI = /^(?:\p{Regional_Indicator}{2}|[#*0-9]\uFE0F?\u20E3|\p{Extended_Pictographic}\uFE0F?\p{Emoji_Modifier}?(?:[\u{E0020}-\u{E007E}]+\u{E007F})?(?:\u200D\p{Extended_Pictographic}\uFE0F?\p{Emoji_Modifier}?)*)$/u

/** Why the platform refuses a reaction send (error 100); undefined when it takes it. */
function reactionProblem (reaction: Record<string, any> | undefined): string | undefined {
  if (typeof reaction !== 'object' || reaction === null) return 'Param reaction is required'
  if (!isText(reaction.message_id, 512)) return "Param reaction['message_id'] is required"
  if (typeof reaction.emoji !== 'string' || (reaction.emoji !== '' && !EMOJI.test(reaction.emoji))) return "Param reaction['emoji'] must be an emoji or empty"
  return undefined
}

/** The parameter each button kind takes at send, in the platform's wire format. */
const BUTTON_PARAMETERS: Record<string, string> = { url: 'text', quick_reply: 'payload', copy_code: 'coupon_code' }

/** Why the platform refuses a template send's components (error 100), by the shapes its send reference gives; undefined when it takes them. */
function templateComponentsProblem (components: unknown): string | undefined {
  if (components === undefined) return undefined
  if (!Array.isArray(components)) return "Param template['components'] must be an array"
  for (const [i, component] of components.entries()) {
    const at = `template['components'][${i}]`
    const parameters: any[] = Array.isArray(component?.parameters) ? component.parameters : []
    if (component?.type === 'button') {
      const expected = BUTTON_PARAMETERS[component.sub_type]
      if (expected === undefined) return `Param ${at}['sub_type'] must be url, quick_reply or copy_code`
      if (typeof component.index !== 'string' || !/^\d$/.test(component.index)) return `Param ${at}['index'] must be a string of the button's position`
      if (parameters.length !== 1 || parameters[0]?.type !== expected || !isText(parameters[0][expected], 2000)) return `Param ${at}['parameters'] must be one ${expected} parameter`
    } else if (component?.type === 'header') {
      const [parameter] = parameters
      if (parameters.length !== 1) return `Param ${at}['parameters'] must hold one parameter`
      if (['image', 'video', 'document'].includes(parameter?.type)) {
        const problem = mediaSendProblem(parameter.type, parameter[parameter.type], () => true)
        if (problem !== undefined) return problem
      } else if (parameter?.type === 'location') {
        if (typeof parameter.location?.latitude !== 'number' || typeof parameter.location?.longitude !== 'number') return `Param ${at}['parameters'][0]['location'] needs latitude and longitude`
      } else if (parameter?.type !== 'text' || !isText(parameter.text, 60)) return `Param ${at}['parameters'][0] must be text, image, video, document or location`
    } else if (component?.type === 'body') {
      if (parameters.some((parameter) => parameter?.type === 'text' && !isText(parameter.text, 1024))) return `Param ${at}['parameters'][]['text'] must be 1 to 1024 characters`
    } else if (component?.type !== 'footer') {
      return `Param ${at}['type'] must be header, body or button`
    }
  }
  return undefined
}

export async function startFakeChatPlatform (options: FakeChatPlatformOptions = {}): Promise<FakeChatPlatform> {
  const settings: FakeChatPlatform['options'] = {
    accessTokens: options.accessTokens ?? [FAKE_ACCESS_TOKEN],
    // A copy: creating and reviewing templates changes this platform's, never another fake's.
    templates: (options.templates ?? DEFAULT_FAKE_TEMPLATES).map((template) => ({ ...template })),
    templatePageSize: options.templatePageSize ?? 2,
    allowedRecipients: options.allowedRecipients,
    messagesPerSecond: options.messagesPerSecond,
    pairIntervalMs: options.pairIntervalMs,
    webhook: options.webhook,
    numbersByToken: options.numbersByToken
  }
  const requests: RecordedRequest[] = []
  const recentSends = new Map<string, number[]>()
  const lastPairSend = new Map<string, number>()
  const media = new Map<string, FakeMedia>()
  let createdTemplates = 0
  // Downloads that never answer; ended when the fake closes, so that closing does not wait for them.
  const stalled = new Set<Socket>()
  const server = Fastify({ logger: false })
  let baseUrl = ''

  /** `details`: error_data's, or, for an error with a title for people (template management), error_user_msg. */
  const fail = (reply: FastifyReply, error: PlatformError, details?: string): FastifyReply => reply.code(error.status).send({
    error: {
      message: error.message,
      type: error.type,
      code: error.code,
      ...('subcode' in error && { error_subcode: error.subcode }),
      ...('userTitle' in error
        ? { is_transient: false, error_user_title: error.userTitle, ...(details !== undefined && { error_user_msg: details }) }
        : details !== undefined && { error_data: { messaging_product: 'whatsapp', details } }),
      fbtrace_id: randomBytes(9).toString('base64url')
    }
  })

  // The platform's own API: bearer token checked, every request recorded. `/_fake/` routes control the fake itself.
  const isPlatformRequest = (request: FastifyRequest): boolean => !request.url.startsWith('/_fake/')
  server.addHook('onRequest', async (request: FastifyRequest, reply) => {
    if (!isPlatformRequest(request)) return
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1]
    if (token === undefined || !settings.accessTokens.includes(token)) return fail(reply, ERRORS.token)
  })
  server.addHook('preHandler', async (request) => {
    if (!isPlatformRequest(request)) return
    const recorded: RecordedRequest = {
      method: request.method,
      path: request.url.split('?')[0],
      query: request.query as Record<string, string>,
      headers: request.headers,
      body: request.body
    }
    requests.push(recorded)
    options.onRequest?.(recorded)
  })

  const tokenOf = (request: FastifyRequest): string => /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? ''
  const mayUse = (request: FastifyRequest, phoneNumberId: string): boolean => {
    const numbers = settings.numbersByToken?.[tokenOf(request)]
    return numbers === undefined || numbers.includes(phoneNumberId)
  }

  // A customer writes: the platform's signed delivery of their message is posted to the webhook.
  server.post<{ Body: { from?: unknown, name?: unknown, text?: unknown } }>('/_fake/inbound', async (request, reply) => {
    const target = settings.webhook
    if (target === undefined) return reply.code(404).send({ message: 'no webhook configured' })
    const { from, name, text } = request.body ?? {}
    if (typeof from !== 'string' || typeof text !== 'string') return reply.code(400).send({ message: 'from and text are required strings' })
    const wamid = newWamid()
    const payload = messagesDelivery(target.phoneNumberId, [{ from, text, wamid, ...(typeof name === 'string' && { name }) }])
    try {
      const res = await deliver(target.url, payload, target.appSecret)
      return { wamid, webhookStatus: res.status }
    } catch (err) {
      return reply.code(502).send({ message: `webhook ${target.url} unreachable: ${(err as Error).message}` })
    }
  })

  server.post<{ Params: { phoneNumberId: string }, Body: Record<string, any> }>(`/${API_VERSION}/:phoneNumberId/messages`, async (request, reply) => {
    const { phoneNumberId } = request.params
    const body = request.body ?? {}
    if (!mayUse(request, phoneNumberId)) return fail(reply, ERRORS.noAccess)
    if (settings.messagesPerSecond !== undefined) {
      const now = Date.now()
      const window = (recentSends.get(phoneNumberId) ?? []).filter((at) => now - at < 1000)
      recentSends.set(phoneNumberId, window)
      if (window.length >= settings.messagesPerSecond) return fail(reply, ERRORS.rate)
      window.push(now)
    }
    // A read receipt of a customer's message (with the typing indicator when asked): `{success: true}`, no message sent.
    if (body.status === 'read') {
      if (body.messaging_product !== 'whatsapp' || !isText(body.message_id, 512) || !body.message_id.startsWith('wamid.')) return fail(reply, ERRORS.invalid, 'Param message_id must be the id of a received message')
      if (body.typing_indicator !== undefined && body.typing_indicator?.type !== 'text') return fail(reply, ERRORS.invalid, "Param typing_indicator['type'] must be text")
      return { success: true }
    }
    // `to` (a phone) or `recipient` (a business-scoped user id): `to` wins when both are given, as on the platform.
    const to: unknown = body.to ?? body.recipient
    if (body.messaging_product !== 'whatsapp' || typeof to !== 'string') return fail(reply, ERRORS.invalid)
    if (body.to === undefined && !BSUID.test(to)) return fail(reply, ERRORS.invalid, 'Param recipient must be a valid business-scoped user ID')
    if (settings.allowedRecipients !== undefined && !settings.allowedRecipients.includes(to)) return fail(reply, ERRORS.recipient)
    if (settings.pairIntervalMs !== undefined) {
      const pair = `${phoneNumberId}:${to}`
      const last = lastPairSend.get(pair)
      if (last !== undefined && Date.now() - last < settings.pairIntervalMs) return fail(reply, ERRORS.pair)
      lastPairSend.set(pair, Date.now())
    }
    if (body.type === 'template') {
      const { name, language, components } = body.template ?? {}
      const template = settings.templates.find((t) => t.name === name && t.language === language?.code && (t.status ?? 'APPROVED') === 'APPROVED')
      if (template === undefined) return fail(reply, ERRORS.template, `template name (${String(name)}) does not exist in ${String(language?.code)}`)
      const problem = templateComponentsProblem(components)
      if (problem !== undefined) return fail(reply, ERRORS.invalid, problem)
      const bodyParameters = (components ?? []).find((c: { type?: string }) => c.type === 'body')?.parameters ?? []
      const expected = placeholderCount(template.body)
      if (bodyParameters.length !== expected) return fail(reply, ERRORS.params, `body: number of localizable_params (${bodyParameters.length}) does not match the expected number of params (${expected})`)
    } else if (body.type === 'text') {
      if (typeof body.text?.body !== 'string' || body.text.body.length > 4096) return fail(reply, ERRORS.invalid)
    } else if (MEDIA_TYPES.includes(body.type)) {
      const problem = mediaSendProblem(body.type, body[body.type], (id) => media.has(id))
      if (problem !== undefined) return fail(reply, ERRORS.invalid, problem)
    } else if (body.type === 'interactive') {
      const problem = interactiveProblem(body.interactive)
      if (problem !== undefined) return fail(reply, ERRORS.invalid, problem)
    } else if (body.type === 'location' || body.type === 'contacts' || body.type === 'reaction') {
      const problem = body.type === 'location' ? locationProblem(body.location) : body.type === 'contacts' ? contactsProblem(body.contacts) : reactionProblem(body.reaction)
      if (problem !== undefined) return fail(reply, ERRORS.invalid, problem)
    } else {
      return fail(reply, ERRORS.invalid)
    }
    return {
      messaging_product: 'whatsapp',
      contacts: [body.to !== undefined ? { input: body.to, wa_id: body.to } : { input: to, user_id: to }],
      messages: [{ id: `wamid.${randomBytes(18).toString('base64url')}` }]
    }
  })

  // A graph object by id: a media object's record (its download URL, valid for minutes on the platform), or a phone number.
  server.get<{ Params: { id: string } }>(`/${API_VERSION}/:id`, async (request, reply) => {
    const { id } = request.params
    const stored = media.get(id)
    if (stored !== undefined) {
      return {
        messaging_product: 'whatsapp',
        url: `${new URL(baseUrl).origin}/whatsapp_business/attachments/?mid=${id}`,
        mime_type: stored.mimeType,
        sha256: createHash('sha256').update(stored.bytes).digest('hex'),
        file_size: stored.fileSize ?? stored.bytes.length,
        id
      }
    }
    if (!/^\d+$/.test(id) || !mayUse(request, id)) return fail(reply, ERRORS.noAccess)
    return { verified_name: 'Fake Business', display_phone_number: '+1 555-078-3881', id, quality_rating: 'GREEN' }
  })

  // The download URL of a media record: the bytes, with the same bearer token.
  server.get<{ Querystring: { mid?: string } }>('/whatsapp_business/attachments/', async (request, reply) => {
    const stored = media.get(request.query.mid ?? '')
    if (stored === undefined) return fail(reply, ERRORS.noAccess)
    switch (stored.download) {
      case 'stall': {
        const socket = request.raw.socket
        stalled.add(socket)
        socket.once('close', () => { stalled.delete(socket) })
        return reply.hijack()
      }
      case 'huge': return reply.type(stored.mimeType).header('content-length', String(HUGE_BYTES)).send(endlessZeros())
      case 'endless': return reply.type(stored.mimeType).send(endlessZeros())
      default: return reply.type(stored.mimeType).send(stored.bytes)
    }
  })

  server.get<{ Params: { businessAccountId: string }, Querystring: { limit?: string, after?: string, status?: string } }>(
    `/${API_VERSION}/:businessAccountId/message_templates`, async (request) => {
      const { limit, after, status } = request.query
      const matching = settings.templates
        .map((t, i) => ({
          id: t.id ?? String(1667192013751000 + i),
          name: t.name,
          language: t.language,
          status: t.status ?? 'APPROVED',
          category: t.category ?? 'UTILITY',
          parameter_format: 'POSITIONAL',
          components: t.components ?? [{ type: 'BODY', text: t.body }]
        }))
        .filter((t) => status === undefined || t.status === status)
      const start = after === undefined ? 0 : Number(Buffer.from(after, 'base64url').toString())
      const size = Math.min(Number(limit ?? 25), settings.templatePageSize)
      const data = matching.slice(start, start + size)
      const cursor = (n: number): string => Buffer.from(String(n)).toString('base64url')
      const paging: Record<string, unknown> = { cursors: { before: cursor(start), after: cursor(start + data.length) } }
      if (start + data.length < matching.length) {
        const next = new URL(`${baseUrl}/${request.params.businessAccountId}/message_templates`)
        next.search = new URLSearchParams({ ...request.query, after: cursor(start + data.length) }).toString()
        paging.next = next.toString()
      }
      return { data, paging }
    })

  // A template submitted for review: PENDING until `reviewTemplate` says otherwise. Names are unique per language.
  server.post<{ Params: { businessAccountId: string }, Body: Record<string, any> }>(`/${API_VERSION}/:businessAccountId/message_templates`, async (request, reply) => {
    const { name, language, category, components } = request.body ?? {}
    if (typeof name !== 'string' || !/^[a-z0-9_]{1,512}$/.test(name)) return fail(reply, ERRORS.invalid, 'Param name must be lowercase letters, digits and underscores')
    if (typeof language !== 'string' || language === '') return fail(reply, ERRORS.invalid, 'Param language is required')
    if (!TEMPLATE_CATEGORIES.includes(category)) return fail(reply, ERRORS.invalid, `Param category must be one of ${TEMPLATE_CATEGORIES.join(', ')}`)
    const body = Array.isArray(components) ? components.find((c: { type?: unknown }) => c?.type === 'BODY') : undefined
    if (typeof body?.text !== 'string') return fail(reply, ERRORS.invalid, 'Param components must include a BODY with text')
    if (settings.templates.some((t) => t.name === name && t.language === language)) {
      return fail(reply, ERRORS.templateExists, `There is already ${language} content for this template. You can create a new template and try again.`)
    }
    const id = String(1667192013760000 + ++createdTemplates)
    settings.templates.push({ id, name, language, body: body.text, status: 'PENDING', category, components, businessAccountId: request.params.businessAccountId })
    return { id, status: 'PENDING', category }
  })

  // Deleting by name deletes the template in every language.
  server.delete<{ Params: { businessAccountId: string }, Querystring: { name?: string } }>(`/${API_VERSION}/:businessAccountId/message_templates`, async (request, reply) => {
    const { name } = request.query
    if (typeof name !== 'string' || name === '') return fail(reply, ERRORS.invalid, 'Param name is required')
    const kept = settings.templates.filter((t) => t.name !== name)
    if (kept.length === settings.templates.length) return fail(reply, ERRORS.templateNotFound, `The message template ${name} wasn't found for this account.`)
    settings.templates = kept
    return { success: true }
  })

  const templateNamed = (name: string, language: string): FakeTemplate | undefined => settings.templates.find((t) => t.name === name && t.language === language)

  async function deliverToWebhook (payload: unknown): Promise<number> {
    const target = settings.webhook
    if (target === undefined) throw new Error('the fake chat platform has no webhook to deliver to (options.webhook)')
    return (await deliver(target.url, payload, target.appSecret)).status
  }

  const reviewTemplate = async (spec: TemplateStatusSpec): Promise<number> => {
    const template = templateNamed(spec.name, spec.language)
    const status = REVIEW_STATUSES[spec.event]
    if (template !== undefined && status !== undefined) template.status = status
    return deliverToWebhook(templateStatusDelivery(spec.businessAccountId ?? template?.businessAccountId ?? FAKE_BUSINESS_ACCOUNT_ID, {
      ...spec,
      id: template?.id ?? '0',
      category: template?.category ?? 'UTILITY'
    }))
  }

  const rateTemplate = async (spec: TemplateQualitySpec): Promise<number> => {
    const template = templateNamed(spec.name, spec.language)
    return deliverToWebhook(templateQualityDelivery(spec.businessAccountId ?? template?.businessAccountId ?? FAKE_BUSINESS_ACCOUNT_ID, { ...spec, id: template?.id ?? '0' }))
  }

  // The review of a template, for the demo: `{name, language, event, reason?}`.
  server.post<{ Body: TemplateStatusSpec }>('/_fake/template-status', async (request, reply) => {
    const { name, language, event } = request.body ?? {}
    if (typeof name !== 'string' || typeof language !== 'string' || typeof event !== 'string') return reply.code(400).send({ message: 'name, language and event are required strings' })
    try {
      return { webhookStatus: await reviewTemplate(request.body) }
    } catch (err) {
      return reply.code(502).send({ message: (err as Error).message })
    }
  })

  await server.listen({ host: '127.0.0.1', port: options.port ?? 0 })
  const address = server.server.address()
  if (address === null || typeof address === 'string') throw new Error('fake chat platform has no port')
  baseUrl = `http://127.0.0.1:${address.port}/${API_VERSION}`

  return {
    url: baseUrl,
    requests,
    sends: () => requests.filter((r) => r.method === 'POST' && r.path.endsWith('/messages')),
    addMedia: (stored) => {
      const id = String(900_000_000_000_000 + media.size + 1)
      media.set(id, stored)
      return id
    },
    reviewTemplate,
    rateTemplate,
    options: settings,
    close: async () => {
      for (const socket of stalled) socket.destroy()
      await server.close()
    }
  }
}

/* Webhook deliveries: what the platform posts to our /webhook/chat. */

export interface InboundMessageSpec {
  /** The customer's phone; with `withholdPhone` it is sent nowhere (a customer known by username). */
  from: string
  /** The customer's business-scoped user id (`from_user_id`, `contacts[].user_id`) and username (`contacts[].profile.username`). */
  userId?: string
  username?: string
  withholdPhone?: boolean
  text?: string
  /** Contact profile name; omit `name` and set `withoutContacts` for deliveries that carry none. */
  name?: string
  withoutContacts?: boolean
  wamid?: string
  /** Unix seconds; defaults to now. */
  timestamp?: number
  /** A whole message object instead of a text message (interactive, image, ...). */
  message?: Record<string, unknown>
}

export interface StatusSpec {
  wamid: string
  status: 'sent' | 'delivered' | 'read' | 'failed'
  recipientId: string
  timestamp?: number
  errors?: unknown[]
}

export const newWamid = (): string => `wamid.${randomBytes(18).toString('base64url')}`

const nowSeconds = (): number => Math.floor(Date.now() / 1000)

const delivery = (phoneNumberId: string, value: Record<string, unknown>): Record<string, unknown> => ({
  object: 'whatsapp_business_account',
  entry: [{
    id: 'fake-business-account',
    changes: [{
      field: 'messages',
      value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '15550783881', phone_number_id: phoneNumberId }, ...value }
    }]
  }]
})

export function messagesDelivery (phoneNumberId: string, specs: InboundMessageSpec[]): Record<string, unknown> {
  const contacts = specs.filter((s) => s.withoutContacts !== true)
    .map((s) => ({
      profile: { name: s.name ?? 'Customer', ...(s.username !== undefined && { username: s.username }) },
      ...(s.withholdPhone !== true && { wa_id: s.from }),
      ...(s.userId !== undefined && { user_id: s.userId })
    }))
  return delivery(phoneNumberId, {
    ...(contacts.length > 0 && { contacts }),
    messages: specs.map((s) => ({
      ...(s.withholdPhone !== true && { from: s.from }),
      ...(s.userId !== undefined && { from_user_id: s.userId }),
      id: s.wamid ?? newWamid(),
      timestamp: String(s.timestamp ?? nowSeconds()),
      ...(s.message ?? { type: 'text', text: { body: s.text ?? '' } })
    }))
  })
}

/** The `message` of an InboundMessageSpec: a customer's image, document, audio, video or sticker (`id` from `addMedia`). */
export function inboundMedia (type: 'image' | 'document' | 'audio' | 'video' | 'sticker', media: { id: string, mimeType: string, caption?: string, filename?: string }): Record<string, unknown> {
  return {
    type,
    [type]: {
      id: media.id,
      mime_type: media.mimeType,
      sha256: randomBytes(32).toString('base64'),
      ...(media.caption !== undefined && { caption: media.caption }),
      ...(media.filename !== undefined && { filename: media.filename })
    }
  }
}

/** The `message` of an InboundMessageSpec: the customer tapped a reply button or a list row of an interactive message. */
export function inboundInteractiveReply (type: 'button_reply' | 'list_reply', reply: { id: string, title: string, description?: string }): Record<string, unknown> {
  return { type: 'interactive', interactive: { type, [type]: reply } }
}

/** The `message` of an InboundMessageSpec: the customer reacted to a message (`wamid`); `emoji` "" removed their reaction, as the platform sends it. */
export function inboundReaction (wamid: string, emoji: string): Record<string, unknown> {
  return { type: 'reaction', reaction: { message_id: wamid, emoji } }
}

/**
 * The `message` of an InboundMessageSpec: the customer completed a flow; `responseJson` is the
 * platform's string, sent as is; `flowWamid`, the flow message's, is the reply's context.
 */
export function inboundFlowReply (responseJson: string, flowWamid?: string): Record<string, unknown> {
  return {
    ...(flowWamid !== undefined && { context: { from: '15550783881', id: flowWamid } }),
    type: 'interactive',
    interactive: { type: 'nfm_reply', nfm_reply: { name: 'flow', body: 'Sent', response_json: responseJson } }
  }
}

/** The `message` of an InboundMessageSpec: the customer shared a location. */
export function inboundLocation (location: { latitude: number, longitude: number, name?: string, address?: string, url?: string }): Record<string, unknown> {
  return { type: 'location', location }
}

/** The `message` of an InboundMessageSpec: the customer shared contact cards, in the platform's format (`name.formatted_name`, `phones`…). */
export function inboundContacts (contacts: unknown[]): Record<string, unknown> {
  return { type: 'contacts', contacts }
}

/**
 * A message quoting another (`wamid`): the platform's `context`, `from` the number that sent the quoted message.
 * Without `message`, a text `body`.
 */
export function inboundContext (wamid: string, message: Record<string, unknown> | string, from = '15550783881'): Record<string, unknown> {
  const part = typeof message === 'string' ? { type: 'text', text: { body: message } } : message
  return { ...part, context: { from, id: wamid } }
}

/** The `message` of an InboundMessageSpec: the customer tapped a template's quick reply button. */
export function inboundQuickReply (payload: string, text: string): Record<string, unknown> {
  return { type: 'button', button: { payload, text } }
}

export function statusesDelivery (phoneNumberId: string, specs: StatusSpec[]): Record<string, unknown> {
  return delivery(phoneNumberId, {
    statuses: specs.map((s) => ({
      id: s.wamid,
      status: s.status,
      timestamp: String(s.timestamp ?? nowSeconds()),
      // A platform user id (a send by `recipient`) comes as `recipient_user_id`, the phone left out when it is withheld.
      ...(BSUID.test(s.recipientId) ? { recipient_user_id: s.recipientId } : { recipient_id: s.recipientId }),
      ...(s.errors !== undefined && { errors: s.errors })
    }))
  })
}

/** The platform's `message_template_status_update` delivery: `message_template_id` is a number, as the platform sends it. */
function templateStatusDelivery (businessAccountId: string, spec: TemplateStatusSpec & { id: string, category?: string }): Record<string, unknown> {
  return templateDelivery(businessAccountId, 'message_template_status_update', {
    event: spec.event,
    message_template_id: Number(spec.id),
    message_template_name: spec.name,
    message_template_language: spec.language,
    reason: spec.reason === undefined ? 'NONE' : spec.reason,
    ...(spec.category !== undefined && { message_template_category: spec.category }),
    ...(spec.otherInfo !== undefined && { other_info: spec.otherInfo })
  })
}

/** The platform's `message_template_quality_update` delivery. */
function templateQualityDelivery (businessAccountId: string, spec: TemplateQualitySpec & { id: string }): Record<string, unknown> {
  return templateDelivery(businessAccountId, 'message_template_quality_update', {
    previous_quality_score: spec.previous ?? 'UNKNOWN',
    new_quality_score: spec.quality,
    message_template_id: Number(spec.id),
    message_template_name: spec.name,
    message_template_language: spec.language
  })
}

/** A business account's own change (its templates), not a number's: the entry's id is the business account's. */
const templateDelivery = (businessAccountId: string, field: string, value: Record<string, unknown>): Record<string, unknown> => ({
  object: 'whatsapp_business_account',
  entry: [{ id: businessAccountId, time: nowSeconds(), changes: [{ value, field }] }]
})

/** JSON as the platform writes it: non-ASCII characters escaped as \uXXXX, so the signed bytes differ from a re-serialisation. */
export function platformJson (payload: unknown): string {
  return JSON.stringify(payload).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

export function signature (body: string | Buffer, appSecret: string): string {
  return `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}`
}

/** The body and headers of one signed delivery, for `inject` or a real POST. */
export function signedDelivery (payload: unknown, appSecret: string): { body: string, headers: Record<string, string> } {
  const body = platformJson(payload)
  return { body, headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature(body, appSecret) } }
}

/** POSTs a signed delivery to a running server's webhook, as the platform would. */
export async function deliver (webhookUrl: string, payload: unknown, appSecret: string): Promise<Response> {
  const { body, headers } = signedDelivery(payload, appSecret)
  return fetch(webhookUrl, { method: 'POST', body, headers })
}
