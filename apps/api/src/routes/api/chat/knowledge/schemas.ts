import { Type } from 'typebox'
import { KNOWLEDGE_SOURCE_STATUSES, KNOWLEDGE_SOURCE_TYPES } from '@switchboard/core/db'
import { DEFAULT_PASSAGES, KNOWLEDGE_LANGUAGES, KNOWLEDGE_LIMITS, MAX_PASSAGES } from '@switchboard/core/knowledge'
import { NullableTimestamp, Timestamp } from '../../../../schemas/common.ts'

const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

const Language = Type.Enum(KNOWLEDGE_LANGUAGES, { errorMessage: `language must be one of ${KNOWLEDGE_LANGUAGES.join(', ')}` })
const Title = Type.String({ minLength: 1, maxLength: KNOWLEDGE_LIMITS.titleMaxChars, errorMessage: `title must be 1 to ${KNOWLEDGE_LIMITS.titleMaxChars} characters` })

/**
 * A source given as JSON (README, Knowledge): `text` or `markdown` with its `content`, `url`, or
 * `faq` with its `pairs`; which fields each type needs is checked by the route, in words naming them.
 */
export const KnowledgeSourceBody = Type.Object({
  type: Type.Enum(['text', 'markdown', 'url', 'faq'], { errorMessage: 'type must be text, markdown, url or faq (a PDF is sent as its bytes, Content-Type: application/pdf)' }),
  title: Type.Optional(Title),
  language: Type.Optional(Language),
  content: Type.Optional(Type.String({ minLength: 1, errorMessage: 'content must be a non-empty string' })),
  url: Type.Optional(Type.String({ minLength: 1, maxLength: KNOWLEDGE_LIMITS.urlMaxChars, errorMessage: `url must be 1 to ${KNOWLEDGE_LIMITS.urlMaxChars} characters` })),
  pairs: Type.Optional(Type.Array(Type.Object({
    question: Type.String({ minLength: 1, maxLength: KNOWLEDGE_LIMITS.faqQuestionMaxChars, errorMessage: `a question must be 1 to ${KNOWLEDGE_LIMITS.faqQuestionMaxChars} characters` }),
    answer: Type.String({ minLength: 1, maxLength: KNOWLEDGE_LIMITS.faqAnswerMaxChars, errorMessage: `an answer must be 1 to ${KNOWLEDGE_LIMITS.faqAnswerMaxChars} characters` })
  }, { additionalProperties: false }), { minItems: 1, maxItems: KNOWLEDGE_LIMITS.faqMaxPairs, errorMessage: `pairs must be 1 to ${KNOWLEDGE_LIMITS.faqMaxPairs} question and answer pairs` }))
}, { additionalProperties: false })

/** A PDF's title and language, in the query: its body is the file. */
export const PdfQuery = Type.Object({
  title: Type.Optional(Title),
  language: Type.Optional(Language)
})

export const KnowledgeSourceParams = Type.Object({ id: Type.String(), sourceId: Type.String() })

export const KnowledgeSourceView = Type.Object({
  id: Type.String(),
  type: Type.Enum(KNOWLEDGE_SOURCE_TYPES),
  title: Type.String(),
  url: nullable(Type.String()),
  language: Type.String(),
  /** `indexing` until its passages are written; `failed` with `error` saying why. */
  status: Type.Enum(KNOWLEDGE_SOURCE_STATUSES),
  /** Why it failed; on a `ready` source, what was left out (its embeddings, when the provider failed). */
  error: nullable(Type.String()),
  chunks: Type.Integer(),
  pages: nullable(Type.Integer()),
  bytes: Type.Integer(),
  createdAt: Timestamp,
  indexedAt: NullableTimestamp
})

export const KnowledgeSourceDetail = Type.Intersect([KnowledgeSourceView, Type.Object({
  /** Its first 200 passages, in order. */
  chunkList: Type.Array(Type.Object({ ordinal: Type.Integer(), heading: Type.String(), page: nullable(Type.Integer()), content: Type.String() }))
})])

export const KnowledgeSourceList = Type.Object({ sources: Type.Array(KnowledgeSourceView) })

export const KnowledgeSearchBody = Type.Object({
  query: Type.String({ minLength: 1, maxLength: KNOWLEDGE_LIMITS.queryMaxChars, errorMessage: `query must be 1 to ${KNOWLEDGE_LIMITS.queryMaxChars} characters` }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PASSAGES, default: DEFAULT_PASSAGES, errorMessage: `limit must be an integer from 1 to ${MAX_PASSAGES}` }))
}, { additionalProperties: false })

export const KnowledgeSearchResult = Type.Object({
  /** The passages a turn would be given for this query, best first; none: nothing relevant (answerFromKnowledgeOnly hands over). */
  results: Type.Array(Type.Object({
    sourceId: Type.String(),
    title: Type.String(),
    heading: Type.String(),
    page: nullable(Type.Integer()),
    content: Type.String(),
    score: Type.Number()
  })),
  relevant: Type.Boolean()
})
