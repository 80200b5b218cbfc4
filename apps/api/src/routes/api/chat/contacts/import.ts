import { Readable, Transform } from 'node:stream'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorCodes } from 'fastify'
import { importContacts } from '@switchboard/core/chat'
import { DomainError } from '@switchboard/core/errors'
import { LONGEST_REQUEST_TIMEOUT_MS } from '../../../../plugins/request-timeout.ts'
import { errorResponses } from '../../../../schemas/common.ts'
import { ContactsImportResult } from './schemas.ts'

/** The import's own body limit (README, Contacts and consent): CSV files are larger than the API's 1 MiB of JSON. */
const IMPORT_MAX_BYTES = 10 * 1024 * 1024

const tooLarge = (): Error => new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE()

/**
 * The body as it arrives, ended by a 413 past IMPORT_MAX_BYTES (a length declared over it is refused
 * before anything is read).
 */
function bounded (payload: Readable): Readable {
  let bytes = 0
  const counted = new Transform({
    transform (chunk: Buffer, _encoding, done) {
      bytes += chunk.length
      done(bytes > IMPORT_MAX_BYTES ? tooLarge() : null, chunk)
    }
  })
  payload.on('error', (err) => counted.destroy(err))
  return payload.pipe(counted)
}

/**
 * `POST /api/chat/contacts/import`: a CSV body (`Content-Type: text/csv`), read as it streams into
 * the selected account's contacts. Its own plugin, so that its parser (the body left a stream, its
 * own limit) and the 415 for any other content type stay on this route.
 */
const contactsImport: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('text/csv', (request, payload, done) => {
    if (Number(request.headers['content-length'] ?? 0) > IMPORT_MAX_BYTES) {
      done(tooLarge(), undefined)
      return
    }
    done(null, bounded(payload))
  })
  // A 413 comes before the body was all read: the rest is not read either, the connection is closed after the answer.
  fastify.addHook('onError', async (_request, reply, error) => {
    if ((error as { statusCode?: number }).statusCode === 413) reply.header('connection', 'close')
  })

  fastify.post('/import', {
    // 100,000 rows take a minute or more to write on a busy machine, read as they arrive.
    config: { requestTimeoutMs: LONGEST_REQUEST_TIMEOUT_MS },
    schema: { tags: ['chat'], consumes: ['text/csv'], response: { 200: ContactsImportResult, ...errorResponses(400, 401, 404, 413, 415) } }
  }, async (request) => {
    const account = await fastify.chatAccountFor(request)
    if (!(request.body instanceof Readable)) throw new DomainError('VALIDATION_ERROR', 'The body must be the CSV file, sent with Content-Type: text/csv')
    return importContacts(fastify.db, account.phoneNumberId, request.body)
  })
}

export default contactsImport
