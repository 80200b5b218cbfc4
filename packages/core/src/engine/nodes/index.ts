import { Type, type TObject, type TProperties } from 'typebox'
import { aggregate } from './aggregate.ts'
import { aiAgent } from './ai-agent.ts'
import { aiGenerate } from './ai-generate.ts'
import { aiReply } from './ai-reply.ts'
import { approval } from './approval.ts'
import { ask } from './ask.ts'
import { code } from './code.ts'
import { condition } from './condition.ts'
import { cryptoNode } from './crypto.ts'
import { date } from './date.ts'
import { dedupe } from './dedupe.ts'
import type { NodeCategory, NodeDefinition, NodeLinkField } from './definition.ts'
import { filter } from './filter.ts'
import { foreach } from './foreach.ts'
import { handoff } from './handoff.ts'
import { httpRequest } from './http-request.ts'
import { mcpCall } from './mcp-call.ts'
import { merge } from './merge.ts'
import { parallel } from './parallel.ts'
import { runWorkflow } from './run-workflow.ts'
import { sendChatInteractive } from './send-chat-interactive.ts'
import { sendChatMedia } from './send-chat-media.ts'
import { sendChatTemplate } from './send-chat-template.ts'
import { sendChat } from './send-chat.ts'
import { set } from './set.ts'
import { sort } from './sort.ts'
import { split } from './split.ts'
import { verifySignature } from './verify-signature.ts'
import { waitForEvent } from './wait-for-event.ts'
import { wait } from './wait.ts'

/**
 * The catalogue: every node type the engine runs, one definition each (./definition.ts), grouped
 * by category in NODE_CATEGORIES' order (the order the api and the docs list them). A new type is
 * one file beside these and one entry here (docs/nodes.md); a definition missing any part does
 * not compile.
 */
const DEFINITIONS = [
  sendChat,
  sendChatTemplate,
  sendChatMedia,
  sendChatInteractive,
  ask,
  handoff,
  httpRequest,
  mcpCall,
  verifySignature,
  condition,
  wait,
  parallel,
  merge,
  runWorkflow,
  foreach,
  approval,
  waitForEvent,
  set,
  split,
  filter,
  sort,
  dedupe,
  aggregate,
  date,
  cryptoNode,
  code,
  aiGenerate,
  aiReply,
  aiAgent
] as const

export type NodeType = typeof DEFINITIONS[number]['type']

export const NODE_TYPES: readonly NodeType[] = DEFINITIONS.map((definition) => definition.type)

const BY_TYPE: ReadonlyMap<string, NodeDefinition> = new Map(DEFINITIONS.map((definition) => [definition.type, definition]))

export const isNodeType = (type: string): type is NodeType => BY_TYPE.has(type)

/** The definition of `type`, or undefined for a type the engine does not know. */
export const nodeDefinition = (type: string): NodeDefinition | undefined => BY_TYPE.get(type)

/** Whether a node starts or joins parallel branches (its type's `flow` trait; engine/README.md, "Branches and joins"). */
export const flowOf = (node: { type: string }): 'fork' | 'join' | undefined => BY_TYPE.get(node.type)?.traits.flow

/** The links of each node type, for the graph functions (engine/graph.ts), which the console bundles. */
export const NODE_LINK_FIELDS: Readonly<Record<string, readonly NodeLinkField[]>> =
  Object.fromEntries(DEFINITIONS.map((definition) => [definition.type, definition.traits.links]))

/** What every node that takes them may add to its config (README, Retries and time-outs). */
const RETRY_FIELDS = {
  retry: Type.Optional(Type.Object({
    attempts: Type.Integer({ minimum: 1, maximum: 10, description: 'Attempts in all, the first included.' }),
    backoffMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000, default: 1000, description: 'The wait before the first retry.' })),
    backoffFactor: Type.Optional(Type.Number({ minimum: 1, maximum: 10, default: 2, description: 'Each later wait is this many times the one before.' }))
  }, { additionalProperties: false, description: 'Attempts after a failure that may pass (network, time-out, 5xx, 429, throttling).' })),
  timeoutMs: Type.Optional(Type.Union([
    Type.Number({ minimum: 1, maximum: 300_000 }),
    Type.String({ pattern: '\\{\\{' })
  ], { description: 'One attempt’s time limit in ms.' }))
} satisfies TProperties

const LEGACY_RETRIES_FIELD = {
  retries: Type.Optional(Type.Union([
    Type.Number({ minimum: 0, maximum: 10 }),
    Type.String({ pattern: '\\{\\{' })
  ], { description: 'The older form of retry: n retries, 0.5 s doubling up to 10 s.' }))
} satisfies TProperties

/** Fields rendered whatever a type's `templateFields`: its retry settings may be templates. */
const ALWAYS_RENDERED = ['timeoutMs', 'retries']

/**
 * The fields of a node's config rendered as templates when it runs: every one, or those of its
 * type's `templateFields` and its retry settings that the config has. The engine renders these;
 * a save checks their filters.
 */
export function templatedFields (definition: NodeDefinition, config: Record<string, unknown>): 'every' | string[] {
  const fields = definition.traits.templateFields
  return fields === 'every' ? 'every' : [...fields, ...ALWAYS_RENDERED].filter((field) => Object.hasOwn(config, field))
}

const schemas = new Map<string, TObject>()

/**
 * A node type's whole config as JSON Schema: its own fields and the retry fields its traits
 * allow. Other keys are allowed: a builder may keep its own beside them.
 */
export function nodeConfigSchema (definition: NodeDefinition): TObject {
  let schema = schemas.get(definition.type)
  if (schema === undefined) {
    const { retries } = definition.traits
    schema = Type.Object({
      ...definition.config,
      ...(retries.allowed ? RETRY_FIELDS : {}),
      ...(retries.legacyRetries === true ? LEGACY_RETRIES_FIELD : {})
    }, { additionalProperties: true })
    schemas.set(definition.type, schema)
  }
  return schema
}

/** A node type as `GET /api/automation/node-types` lists it: JSON, for the console and for partners. */
export interface NodeTypeDescription {
  type: string
  category: NodeCategory
  description: string
  /** The config's JSON Schema (`nodeConfigSchema`). */
  configSchema: Record<string, unknown>
  example: Record<string, unknown>
  traits: {
    pure: boolean
    recordsBeforeEffect: boolean
    templateFields: 'every' | string[]
    links: Array<{ field: string, kind: 'node' | 'map' | 'list' }>
    flow?: 'fork' | 'join'
    resultPaths?: string[]
    codeFields?: string[]
    callsWorkflow?: string
    toolWorkflows?: string
    credentials: 'never' | { fields: string[], types: string[] }
    secretFields: Array<{ field: string, kind: string, keeps?: string[] }>
    retries: { allowed: boolean, defaultTimeoutMs?: number, legacyRetries?: boolean }
  }
}

function describeNodeType (definition: NodeDefinition): NodeTypeDescription {
  const { traits } = definition
  return {
    type: definition.type,
    category: definition.category,
    description: definition.description,
    configSchema: JSON.parse(JSON.stringify(nodeConfigSchema(definition))) as Record<string, unknown>,
    example: definition.example,
    traits: {
      pure: traits.pure,
      recordsBeforeEffect: traits.recordsBeforeEffect,
      templateFields: traits.templateFields === 'every' ? 'every' : [...traits.templateFields],
      links: traits.links.map((link) => ({ ...link })),
      credentials: traits.credentials === 'never' ? 'never' : { fields: [...traits.credentials.fields], types: [...traits.credentials.types] },
      secretFields: traits.secretFields.map((secret) => secret.kind === 'entries' && secret.keeps !== undefined
        ? { field: secret.field, kind: secret.kind, keeps: [...secret.keeps].sort() }
        : { field: secret.field, kind: secret.kind }),
      retries: { ...traits.retries },
      ...(traits.flow !== undefined && { flow: traits.flow }),
      ...(traits.resultPaths !== undefined && { resultPaths: [...traits.resultPaths] }),
      ...(traits.codeFields !== undefined && { codeFields: [...traits.codeFields] }),
      ...(traits.callsWorkflow !== undefined && { callsWorkflow: traits.callsWorkflow }),
      ...(traits.toolWorkflows !== undefined && { toolWorkflows: traits.toolWorkflows })
    }
  }
}

let descriptions: NodeTypeDescription[] | undefined

/** Every node type described, in catalogue order (made once: definitions do not change while the process runs). */
export function describeNodeTypes (): NodeTypeDescription[] {
  descriptions ??= DEFINITIONS.map(describeNodeType)
  return descriptions
}
