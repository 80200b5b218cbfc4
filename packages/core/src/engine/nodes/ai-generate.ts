import { Type } from 'typebox'
import { NodeError, type NodeModelMessage } from '../types.ts'
import { AI_FIELDS, AI_OUTPUT_FIELDS, answerOutput, askedOutput, askModel, MAX_OUTPUT_TOKENS_FIELD, outputTokensOf, promptText, providerOf, usageLine, validateAiOutput } from './ai.ts'
import { optionalString } from './config.ts'
import { defineNode, templated } from './definition.ts'

/** What a prompt and a system text may be once rendered, in bytes. */
const MAX_PROMPT_BYTES = 32 * 1024

/**
 * One question to the configured model (README, Node types): its answer as text, or as JSON
 * parsed (never run) and checked against the node's schema. A call the provider may get over
 * (429, 5xx, a time-out) is retried by the node's `retry`.
 */
export const aiGenerate = defineNode({
  type: 'ai_generate',
  category: 'AI',
  description: 'Asks the AI model (AI_MODEL): its answer as text, or as JSON checked against a schema (data, never code).',
  config: {
    prompt: templated(Type.String({ minLength: 1, maxLength: MAX_PROMPT_BYTES, description: 'What the model is asked; at most 32 KiB once rendered (an object alone is sent as JSON).' })),
    system: Type.Optional(templated(Type.String({ maxLength: MAX_PROMPT_BYTES, description: 'The system prompt: who the model is and how it answers; at most 32 KiB once rendered.' }))),
    model: AI_FIELDS.model,
    ...AI_OUTPUT_FIELDS,
    maxOutputTokens: MAX_OUTPUT_TOKENS_FIELD
  },
  example: {
    prompt: 'Classify this ticket as billing, bug or other: {{triggerData.body.text}}',
    output: 'json',
    jsonSchema: { type: 'object', properties: { category: { type: 'string', enum: ['billing', 'bug', 'other'] } }, required: ['category'] }
  },
  traits: {
    pure: false,
    recordsBeforeEffect: true,
    templateFields: ['prompt', 'system', 'model'],
    links: [],
    // What it renders goes to the provider: no credential value may be written into it.
    credentials: 'never',
    secretFields: [],
    retries: { allowed: true }
  },
  validate: validateAiOutput,
  async execute ({ config, deps, beforeEffect, log, attempt, signal }) {
    const provider = providerOf(deps)
    const prompt = promptText(config, 'prompt', MAX_PROMPT_BYTES)
    if (prompt === undefined) throw new NodeError('prompt is required')
    const asked = askedOutput(config)
    const system = [promptText(config, 'system', MAX_PROMPT_BYTES), asked.instruction].filter((part) => part !== undefined).join('\n\n')
    const messages: NodeModelMessage[] = [...(system === '' ? [] : [{ role: 'system' as const, content: system }]), { role: 'user', content: prompt }]
    const model = optionalString(config, 'model') ?? provider.model
    const maxOutputTokens = outputTokensOf(config, provider)

    await beforeEffect(`Asking ${model} (attempt ${attempt})`)
    const answer = await askModel(provider, { model, messages, ...(asked.jsonSchema !== undefined && { jsonSchema: asked.jsonSchema }), maxOutputTokens, signal })
    log('INFO', usageLine(answer))
    return { output: { ...answerOutput(answer.content, asked), model: answer.model, tokensIn: answer.tokensIn, tokensOut: answer.tokensOut } }
  }
})
