import { Type } from 'typebox'
import { Value } from 'typebox/value'
import { objectSchemaProblem } from '../json-schema.ts'
import { NodeError, type NodeModelMessage } from '../types.ts'
import { AI_FIELDS, askModel, MAX_OUTPUT_TOKENS_FIELD, outputTokensOf, promptText, providerOf, usageLine } from './ai.ts'
import { optionalChoice, optionalObject, optionalString } from './config.ts'
import { defineNode, oneOfAnyCase, templated } from './definition.ts'

/** What a prompt and a system text may be once rendered, in bytes. */
const MAX_PROMPT_BYTES = 32 * 1024
/** The JSON of a jsonSchema, checked when the workflow is saved. */
const MAX_JSON_SCHEMA_BYTES = 8 * 1024
const OUTPUTS = ['text', 'json'] as const

/** Without a schema the provider cannot hold the model to JSON: it is asked to write nothing else. */
const JSON_ONLY = 'Answer with one JSON value and nothing else: no prose, no code fence.'

/** A model's JSON, tolerating the one code fence models put around it; anything else that is not JSON fails the node. */
function parseAnswer (content: string): unknown {
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/i.exec(content)
  try {
    return JSON.parse(fenced === null ? content : fenced[1]!)
  } catch {
    const shown = content.length > 200 ? `${content.slice(0, 200)}…` : content
    throw new NodeError(`The model's answer is not JSON: ${JSON.stringify(shown)}`)
  }
}

/** The first way `value` does not follow `schema`, as `/path message`. */
function schemaMismatch (schema: Record<string, unknown>, value: unknown): string | undefined {
  if (Value.Check(schema as never, value)) return undefined
  const [first] = Value.Errors(schema as never, value)
  return first === undefined ? 'it does not match' : `${first.instancePath === '' ? '/' : first.instancePath} ${first.message}`
}

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
    output: Type.Optional(oneOfAnyCase(OUTPUTS, { default: 'text', description: 'text: the answer as text; json: the answer parsed as JSON (the node fails when it is not).' })),
    jsonSchema: Type.Optional(Type.Object({}, {
      additionalProperties: true,
      description: 'With output json: the JSON Schema of an object the answer must match, given to the provider and checked (at most 8 KiB; no pattern or $ref).'
    })),
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
  validate (config) {
    if (config.jsonSchema === undefined || config.jsonSchema === null) return
    if (typeof config.output !== 'string' || config.output.toLowerCase() !== 'json') throw new NodeError('jsonSchema is only for output json')
    const problem = objectSchemaProblem(config.jsonSchema, 'jsonSchema', MAX_JSON_SCHEMA_BYTES)
    if (problem !== undefined) throw new NodeError(problem)
  },
  async execute ({ config, deps, beforeEffect, log, attempt, signal }) {
    const provider = providerOf(deps)
    const prompt = promptText(config, 'prompt', MAX_PROMPT_BYTES)
    if (prompt === undefined) throw new NodeError('prompt is required')
    const output = optionalChoice(config, 'output', OUTPUTS) ?? 'text'
    const jsonSchema = output === 'json' ? optionalObject(config, 'jsonSchema') : undefined
    const system = [promptText(config, 'system', MAX_PROMPT_BYTES), output === 'json' && jsonSchema === undefined ? JSON_ONLY : undefined]
      .filter((part) => part !== undefined).join('\n\n')
    const messages: NodeModelMessage[] = [...(system === '' ? [] : [{ role: 'system' as const, content: system }]), { role: 'user', content: prompt }]
    const model = optionalString(config, 'model') ?? provider.model
    const maxOutputTokens = outputTokensOf(config, provider)

    await beforeEffect(`Asking ${model} (attempt ${attempt})`)
    const answer = await askModel(provider, { model, messages, ...(jsonSchema !== undefined && { jsonSchema }), maxOutputTokens, signal })
    log('INFO', usageLine(answer))
    const usage = { model: answer.model, tokensIn: answer.tokensIn, tokensOut: answer.tokensOut }
    const content = (answer.content ?? '').trim()
    if (content === '') throw new NodeError('The model gave no answer')
    if (output === 'text') return { output: { text: content, ...usage } }
    const json = parseAnswer(content)
    const mismatch = jsonSchema === undefined ? undefined : schemaMismatch(jsonSchema, json)
    if (mismatch !== undefined) throw new NodeError(`The model's JSON does not match jsonSchema: ${mismatch}`)
    return { output: { json, ...usage } }
  }
})
