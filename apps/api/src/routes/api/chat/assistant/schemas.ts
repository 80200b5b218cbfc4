import { Type } from 'typebox'
import { MAX_DEBOUNCE_MS, MAX_INSTRUCTIONS_CHARS, MAX_MODEL_NAME_CHARS } from '@switchboard/core/assistant'
import { NullableTimestamp } from '../../../../schemas/common.ts'

export const AssistantSettingsBody = Type.Object({
  instructions: Type.String({ maxLength: MAX_INSTRUCTIONS_CHARS, errorMessage: `instructions must be at most ${MAX_INSTRUCTIONS_CHARS} characters` }),
  answerAlways: Type.Optional(Type.Boolean()),
  model: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: MAX_MODEL_NAME_CHARS, errorMessage: `model must be 1 to ${MAX_MODEL_NAME_CHARS} characters` }), Type.Null()])),
  apiKeyCredentialId: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()])),
  debounceMs: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_DEBOUNCE_MS, errorMessage: `debounceMs must be an integer from 0 to ${MAX_DEBOUNCE_MS}` })),
  answerFromKnowledgeOnly: Type.Optional(Type.Boolean())
}, { additionalProperties: false })

export const AssistantSettingsView = Type.Object({
  instructions: Type.String(),
  answerAlways: Type.Boolean(),
  model: Type.Union([Type.String(), Type.Null()]),
  apiKeyCredentialId: Type.Union([Type.String(), Type.Null()]),
  debounceMs: Type.Integer(),
  /** Hand over to a person when the knowledge has nothing relevant, instead of answering (README, Knowledge). */
  answerFromKnowledgeOnly: Type.Boolean(),
  /** The model turns use; null: the assistant is off for this number. */
  effectiveModel: Type.Union([Type.String(), Type.Null()]),
  updatedAt: NullableTimestamp
})

export const UsageQuery = Type.Object({
  days: Type.Integer({ minimum: 1, maximum: 366, default: 30 })
})

export const AssistantUsage = Type.Object({
  days: Type.Integer(),
  turns: Type.Integer(),
  byOutcome: Type.Record(Type.String(), Type.Integer()),
  tokensIn: Type.Number(),
  tokensOut: Type.Number(),
  toolCalls: Type.Integer(),
  drafts: Type.Record(Type.String(), Type.Integer()),
  latencyP50Ms: Type.Union([Type.Integer(), Type.Null()]),
  latencyP95Ms: Type.Union([Type.Integer(), Type.Null()])
})
