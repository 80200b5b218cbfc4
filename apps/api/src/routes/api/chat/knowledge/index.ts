import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type, type Static } from 'typebox'
import { DomainError } from '@switchboard/core/errors'
import { DEFAULT_KNOWLEDGE_LANGUAGE, DEFAULT_PASSAGES, enqueueIndexing, KNOWLEDGE_LIMITS, type IndexRequest, type NewKnowledgeSource } from '@switchboard/core/knowledge'
import { errorResponses, IdParams } from '../../../../schemas/common.ts'
import { KnowledgeSearchBody, KnowledgeSearchResult, KnowledgeSourceBody, KnowledgeSourceDetail, KnowledgeSourceList, KnowledgeSourceParams, KnowledgeSourceView, PdfQuery } from './schemas.ts'

const MIB = 1024 * 1024
const invalid = (message: string): DomainError => new DomainError('VALIDATION_ERROR', message)

/** A JSON source as core takes it, each type's own fields required, in words naming them. */
function jsonSource (body: Static<typeof KnowledgeSourceBody>): NewKnowledgeSource {
  const language = body.language ?? DEFAULT_KNOWLEDGE_LANGUAGE
  switch (body.type) {
    case 'text':
    case 'markdown': {
      if (body.content === undefined) throw invalid(`A ${body.type} source needs its content`)
      if (Buffer.byteLength(body.content) > KNOWLEDGE_LIMITS.textMaxBytes) throw invalid(`content must be at most ${KNOWLEDGE_LIMITS.textMaxBytes / MIB} MiB`)
      if (body.title === undefined) throw invalid(`A ${body.type} source needs a title`)
      return { type: body.type, title: body.title, language, body: body.content }
    }
    case 'faq':
      if (body.pairs === undefined) throw invalid('A faq source needs its pairs: [{question, answer}]')
      if (body.title === undefined) throw invalid('A faq source needs a title')
      return { type: 'faq', title: body.title, language, faq: body.pairs }
    case 'url': {
      if (body.url === undefined) throw invalid('A url source needs its url')
      let url: URL
      try {
        url = new URL(body.url)
      } catch {
        throw invalid('url must be an absolute http or https URL')
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('url must be an absolute http or https URL')
      return { type: 'url', title: body.title ?? url.href.slice(0, KNOWLEDGE_LIMITS.titleMaxChars), language, url: url.href }
    }
  }
}

/**
 * An account's knowledge (README, Knowledge): its sources, added as JSON (text, Markdown, a URL,
 * FAQ pairs) or as a PDF's bytes, indexed by the worker, and what a turn would retrieve. `:id` is
 * a linked account or `default`; whoever can use it reads, and changes but for the default
 * account's, which only admins change. Its own plugin: the PDF parser and the 20 MiB body limit
 * stay on these routes.
 */
const knowledge: FastifyPluginAsyncTypebox = async (fastify) => {
  /** After the commit, best effort: a source whose job was not queued is queued again by the worker's reconciler. */
  async function queueIndexing (request: FastifyRequest, source: IndexRequest): Promise<void> {
    try {
      await enqueueIndexing(fastify.queues, [source])
    } catch (err) {
      request.log.warn({ err, sourceId: source.id }, 'the knowledge source was stored but its indexing not queued')
    }
  }

  // JSON and PDF only: any other body is a 415 here (text/plain's parser is Fastify's default elsewhere).
  fastify.removeContentTypeParser('text/plain')
  fastify.addContentTypeParser('application/pdf', { parseAs: 'buffer', bodyLimit: KNOWLEDGE_LIMITS.pdfMaxBytes }, (_request, body, done) => { done(null, body) })

  fastify.post('/:id/knowledge', {
    bodyLimit: KNOWLEDGE_LIMITS.pdfMaxBytes,
    schema: {
      tags: ['chat'],
      params: IdParams,
      consumes: ['application/json', 'application/pdf'],
      querystring: PdfQuery,
      body: { content: { 'application/json': { schema: KnowledgeSourceBody }, 'application/pdf': { schema: {} } } } as unknown as typeof KnowledgeSourceBody,
      response: { 202: KnowledgeSourceView, ...errorResponses(400, 401, 403, 404, 413, 415) }
    }
  }, async (request, reply) => {
    const account = await fastify.chatAccountSettingsOf(request, request.params.id, 'change')
    const body = request.body as unknown
    let source: NewKnowledgeSource
    if (Buffer.isBuffer(body)) {
      if (body.byteLength === 0) throw invalid('The PDF is empty')
      if (request.query.title === undefined) throw invalid('A PDF needs a title: ?title=')
      source = { type: 'pdf', title: request.query.title, language: request.query.language ?? DEFAULT_KNOWLEDGE_LANGUAGE, upload: body }
    } else {
      source = jsonSource(request.body)
    }
    const row = await fastify.knowledgeSources.add(account.phoneNumberId, request.user.sub, source, fastify.config.quotas)
    await queueIndexing(request, row)
    // The response's schema leaves out what only queues it (requestedAt, userId).
    return reply.code(202).send(row)
  })

  fastify.get('/:id/knowledge', {
    schema: { tags: ['chat'], params: IdParams, response: { 200: KnowledgeSourceList, ...errorResponses(401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountSettingsOf(request, request.params.id, 'read')
    return { sources: await fastify.knowledgeSources.list(account.phoneNumberId) }
  })

  fastify.get('/:id/knowledge/:sourceId', {
    schema: { tags: ['chat'], params: KnowledgeSourceParams, response: { 200: KnowledgeSourceDetail, ...errorResponses(401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountSettingsOf(request, request.params.id, 'read')
    return await fastify.knowledgeSources.get(account.phoneNumberId, request.params.sourceId)
  })

  fastify.delete('/:id/knowledge/:sourceId', {
    schema: { tags: ['chat'], params: KnowledgeSourceParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404) } }
  }, async (request, reply) => {
    const account = await fastify.chatAccountSettingsOf(request, request.params.id, 'change')
    await fastify.knowledgeSources.remove(account.phoneNumberId, request.params.sourceId)
    return reply.code(204).send(null)
  })

  fastify.post('/:id/knowledge/:sourceId/reindex', {
    schema: { tags: ['chat'], params: KnowledgeSourceParams, response: { 202: KnowledgeSourceView, ...errorResponses(401, 403, 404) } }
  }, async (request, reply) => {
    const account = await fastify.chatAccountSettingsOf(request, request.params.id, 'change')
    const row = await fastify.knowledgeSources.reindex(account.phoneNumberId, request.params.sourceId)
    await queueIndexing(request, row)
    return reply.code(202).send(row)
  })

  fastify.post('/:id/knowledge/search', {
    schema: { tags: ['chat'], params: IdParams, body: KnowledgeSearchBody, response: { 200: KnowledgeSearchResult, ...errorResponses(400, 401, 404) } }
  }, async (request) => {
    const account = await fastify.chatAccountSettingsOf(request, request.params.id, 'read')
    const results = await fastify.knowledgeRetrieval.search(account.phoneNumberId, request.body.query, { limit: request.body.limit ?? DEFAULT_PASSAGES })
    return { results, relevant: results.length > 0 }
  })
}

export default knowledge
