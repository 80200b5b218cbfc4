import { pipeline, Transform, type Readable } from 'node:stream'
import type { DbOrTx } from '../db/client.ts'
import type { ChatMessageMedia } from '../db/schema/index.ts'
import { DomainError } from '../errors.ts'
import type { Logger } from '../logger.ts'
import type { UsableChatAccount } from './accounts.ts'
import { ChatPlatformUnavailableError, MEDIA_KINDS, MEDIA_LIMITS, type ChatClient, type MediaContent, type MediaKind } from './client.ts'
import { conversationsRepository } from './conversations.ts'
import { platformFailure } from './platform-errors.ts'

/** The platform shows no caption on audio or stickers, and a file name on documents only. */
const CAPTIONED: ReadonlySet<MediaKind> = new Set(['image', 'document', 'video'])

const invalid = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

const given = (value: unknown): boolean => value !== undefined && value !== null && value !== ''

function text (value: unknown, field: string, max: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) throw invalid(`${field} must be 1 to ${max} characters`)
  return value
}

/**
 * A media send as the platform takes it, from what an API caller or a workflow node wrote: one
 * of `link` (https: the platform fetches it) and `mediaId`, a caption where the platform shows
 * one, a file name on documents; refused (400 `VALIDATION_ERROR`) naming the field otherwise.
 */
export function checkMediaSend (input: Record<string, unknown>): MediaContent {
  const kind = MEDIA_KINDS.find((candidate) => candidate === input.kind)
  if (kind === undefined) throw invalid(`kind must be one of ${MEDIA_KINDS.join(', ')}`)
  if (given(input.link) === given(input.mediaId)) {
    throw invalid(given(input.link) ? 'link and mediaId cannot both be given: send one' : 'link or mediaId is required')
  }
  let source: Pick<MediaContent, 'link' | 'mediaId'>
  if (given(input.link)) {
    const link = text(input.link, 'link', MEDIA_LIMITS.link)
    if (!URL.canParse(link) || new URL(link).protocol !== 'https:') throw invalid('link must be an https URL')
    source = { link }
  } else {
    source = { mediaId: text(input.mediaId, 'mediaId', MEDIA_LIMITS.mediaId) }
  }
  if (given(input.caption) && !CAPTIONED.has(kind)) throw invalid(`caption is not allowed for ${kind} messages`)
  if (given(input.filename) && kind !== 'document') throw invalid('filename is only for document messages')
  return {
    kind,
    ...source,
    ...(given(input.caption) && { caption: text(input.caption, 'caption', MEDIA_LIMITS.caption) }),
    ...(given(input.filename) && { filename: text(input.filename, 'filename', MEDIA_LIMITS.filename) })
  }
}

/** Inbound media fields are cut to these (the platform sends far less); an id longer than mediaId's bound is not a media id. */
const INBOUND_MAX_CHARS = { mimeType: 255, caption: 4096, filename: 1024, sha256: 128 } as const

/** The media an inbound message carries, kept with it so that it can be fetched later; undefined without a media id. */
export function inboundMediaOf (message: Record<string, unknown>): ChatMessageMedia | undefined {
  const kind = MEDIA_KINDS.find((candidate) => candidate === message.type)
  const part = kind === undefined ? undefined : message[kind]
  if (!isRecord(part) || typeof part.id !== 'string' || part.id === '' || part.id.length > MEDIA_LIMITS.mediaId) return undefined
  const cut = (field: keyof typeof INBOUND_MAX_CHARS, value: unknown) =>
    typeof value === 'string' && value !== '' ? { [field]: value.slice(0, INBOUND_MAX_CHARS[field]) } : {}
  return { id: part.id, ...cut('mimeType', part.mime_type), ...cut('caption', part.caption), ...cut('filename', part.filename), ...cut('sha256', part.sha256) }
}

/** A media type the response may carry as Content-Type; anything else is sent as bytes. */
const MIME_TYPE = /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(?:\s*;\s*[\w!#$&^.+-]+=[\w!#$&^.+"-]*)*$/

const contentTypeOf = (candidates: Array<string | undefined>): string =>
  candidates.find((type): type is string => type !== undefined && type.length <= 255 && MIME_TYPE.test(type)) ?? 'application/octet-stream'

/** A media download ready to be streamed to the caller: nothing of it is kept. */
export interface MediaStream {
  contentType: string
  /** The platform's Content-Length, at most the size bound. */
  contentLength?: number
  filename?: string
  body: Readable
}

interface MediaDownloadsOptions {
  db: DbOrTx
  client: Pick<ChatClient, 'getMedia' | 'downloadMedia'>
  /** CHAT_MEDIA_MAX_BYTES: a larger media is refused, or cut where it passes the bound. */
  maxBytes: number
  /** CHAT_MEDIA_TIMEOUT_MS: from the platform's media record to the last byte. */
  timeoutMs: number
  logger: Pick<Logger, 'warn'>
}

/**
 * `GET /api/chat/messages/:id/media`: the media of a message of the selected account's conversations,
 * streamed from the platform (its media record, then its download URL, both with the account's
 * token) to the caller as it arrives. The answer is known bad before a byte is sent when the platform
 * declares too large a size (502 `CHAT_MEDIA_TOO_LARGE`) or does not answer in time (504
 * `CHAT_MEDIA_TIMEOUT`); a body that passes the size or time bound later is cut, which the caller
 * sees as a broken transfer.
 */
export function mediaDownloads (options: MediaDownloadsOptions) {
  const { client, maxBytes, timeoutMs, logger } = options
  const conversations = conversationsRepository(options.db)
  const tooLarge = (bytes: number): DomainError =>
    new DomainError('CHAT_MEDIA_TOO_LARGE', `Media is larger than the media size limit (${bytes} bytes, CHAT_MEDIA_MAX_BYTES is ${maxBytes})`)

  /** Counts what passes: past the bound, the download fails and the caller's transfer is cut. */
  function bounded (source: Readable, messageId: string): Readable {
    let bytes = 0
    const counter = new Transform({
      transform (chunk: Buffer, _encoding, callback) {
        bytes += chunk.length
        callback(bytes > maxBytes ? tooLarge(bytes) : null, chunk)
      }
    })
    return pipeline(source, counter, (err) => {
      // A caller that went away closes the stream early: that is theirs to know, not ours.
      if (err != null && (err as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') {
        logger.warn({ err, messageId, bytes }, 'chat media download cut')
      }
    })
  }

  return async function downloadMedia (account: UsableChatAccount, messageId: string): Promise<MediaStream> {
    const message = await conversations.messageOfNumber(account.phoneNumberId, messageId)
    if (message === null) throw new DomainError('MESSAGE_NOT_FOUND', 'Message not found')
    const media = message.media
    if (media?.id === undefined) throw new DomainError('MEDIA_NOT_FOUND', 'Message has no media')
    // A played customer's media is a description only (README, Sandbox numbers): the platform has no bytes of it.
    if (account.isSandbox) throw new DomainError('MEDIA_NOT_FOUND', 'A sandbox number\'s media has no content to download')
    const signal = AbortSignal.timeout(timeoutMs)
    const failure = (err: unknown): unknown => signal.aborted
      ? new DomainError('CHAT_MEDIA_TIMEOUT', `Chat platform media did not arrive within CHAT_MEDIA_TIMEOUT_MS (${timeoutMs} ms)`)
      : platformFailure(err)
    let record
    try {
      record = await client.getMedia(media.id, account.accessToken, signal)
    } catch (err) {
      throw failure(err)
    }
    if (typeof record.url !== 'string') throw platformFailure(new ChatPlatformUnavailableError('Chat platform answered a media record without a url'))
    if (typeof record.file_size === 'number' && record.file_size > maxBytes) throw tooLarge(record.file_size)
    let download
    try {
      download = await client.downloadMedia(record.url, account.accessToken, signal)
    } catch (err) {
      throw failure(err)
    }
    if (download.contentLength !== undefined && download.contentLength > maxBytes) {
      download.body.destroy()
      throw tooLarge(download.contentLength)
    }
    return {
      contentType: contentTypeOf([record.mime_type, download.contentType, media.mimeType]),
      ...(download.contentLength !== undefined && { contentLength: download.contentLength }),
      ...(media.filename !== undefined && { filename: media.filename }),
      body: bounded(download.body, messageId)
    }
  }
}

export type MediaDownloads = ReturnType<typeof mediaDownloads>
