import { Type, type TProperties, type TSchema } from 'typebox'
import type { Limits } from '../../config.ts'
import type { CredentialType } from '../../db/schema/credentials.ts'
import type { CodeSandboxPool } from '../sandbox/pool.ts'
import type { NodeExecutor } from '../types.ts'

/**
 * One node type, whole (docs/nodes.md): what its config holds, how the rest of the service treats
 * it, and how it runs. Validation, export and import, the graph, credential references, retries,
 * `/api/automation/node-types`, the OpenAPI document and the console read these; nothing else
 * names a node type.
 */
export interface NodeDefinition<T extends string = string> extends NodeExecutor<T> {
  /** Where the console's palette lists it. */
  category: NodeCategory
  /** One sentence for the console's palette and the docs. */
  description: string
  /**
   * The config's fields: descriptions, defaults and bounds. A field written as a template
   * (`templated`) is checked when the workflow is saved only if it holds no placeholder; the
   * rendered value is checked again by the executor. Other keys are kept and ignored.
   */
  config: TProperties
  /** A starting config for a new node of this type (the console's palette). */
  example: Record<string, unknown>
  traits: NodeTraits
  /** Save-time checks the schema cannot express, within the configured `limits`; throws an Error whose message names the field. */
  validate?: (config: Record<string, unknown>, limits: NodeSaveLimits) => void
  /**
   * Save-time checks that take work off the caller's event loop (compiling code on a sandbox
   * thread): why the config is refused, naming the field, or undefined.
   */
  validateAsync?: (config: Record<string, unknown>, tools: NodeSaveTools) => Promise<string | undefined>
}

/** The palette's groups, in the order it shows them. */
export const NODE_CATEGORIES = ['Chat', 'HTTP', 'Logic', 'Flow', 'Data', 'Code', 'AI'] as const
export type NodeCategory = typeof NODE_CATEGORIES[number]

/** The settings save-time checks read (README, Configuration). */
export type NodeSaveLimits = Pick<Limits, 'codeMaxBytes'>

/** What asynchronous save-time checks use: the saving process's code sandbox, to compile code. */
export interface NodeSaveTools {
  code: Pick<CodeSandboxPool, 'check'>
}

/** A config field that holds node ids: a link of the graph. */
export interface NodeLinkField {
  field: string
  /** `node`: the field is a node id; `map`: an object from values to node ids (a switch's cases); `list`: node ids (a parallel's branches). */
  kind: 'node' | 'map' | 'list'
}

/**
 * A config field that may hold a secret written into the workflow, removed from an export unless
 * it is a template (README, Export and import): `value` the whole field; `entries` each literal
 * entry of an object, but those `keeps` names (lower case); `url` a URL's user info and literal
 * query parameters.
 */
export type SecretField =
  | { field: string, kind: 'value' }
  | { field: string, kind: 'entries', keeps?: ReadonlySet<string> }
  | { field: string, kind: 'url' }

export interface NodeTraits {
  /**
   * No outside effect: deterministic enough, given the run's result and trigger, that the engine
   * runs it in memory between checkpoints and a crash runs it again. Any other type is
   * checkpointed before it acts and after it.
   */
  pure: boolean
  /**
   * Writes the checkpoint before its outside effect itself (`beforeEffect`): a run that reaches
   * one unclaimed (its pure nodes ran in memory) is claimed by that checkpoint.
   */
  recordsBeforeEffect: boolean
  /** The config fields rendered as templates before the node runs: every field, or only these. */
  templateFields: 'every' | readonly string[]
  /** The config fields that are links, in the order the engine follows them (before `next` and edges). */
  links: readonly NodeLinkField[]
  /**
   * The owner's credentials (README, Credentials): the config fields that may refer to them
   * (`credential` where the node authenticates with one) and the credential types its `credential`
   * field accepts. `never`: not even a reference stored before today's rules resolves (a chat
   * message is stored on its conversation, readable in the inbox).
   */
  credentials: 'never' | { fields: readonly string[], types: readonly CredentialType[] }
  /** Where a workflow author may write a secret: an export removes these. */
  secretFields: readonly SecretField[]
  /**
   * `retry` and `timeoutMs` (README, Retries and time-outs): whether the node takes them, its time
   * limit per attempt when it gives none, and whether it keeps http_request's older `retries`.
   */
  retries: { allowed: boolean, defaultTimeoutMs?: number, legacyRetries?: boolean }
  /**
   * Parallel branches (engine/README.md, "Branches and joins"): a `fork` starts the branches its
   * `list` link names, as child runs; a `join` is where they meet, and the fork's run goes on
   * from it once they are done.
   */
  flow?: 'fork' | 'join'
  /**
   * Config fields that name a value of the run by its path (`n1.status`) unless written as a
   * template, a condition's `field`: renaming a node rewrites them (workflows/rename-node.ts).
   */
  resultPaths?: readonly string[]
  /** Config fields holding source code: renaming a node lists the mentions of its id there, never rewrites them. */
  codeFields?: readonly string[]
  /**
   * The config field naming the workflow it runs as a child run (run_workflow, foreach): a key
   * limited to workflows saves there only an id of its list (README, API keys).
   */
  callsWorkflow?: string
  /**
   * The config field listing workflow ids it calls as tools (ai_agent): each must be an AGENT
   * workflow of the owner, checked when the workflow is saved (README, AI agents).
   */
  toolWorkflows?: string
}

/** Traits most pure nodes share: no links, no credentials, no secrets, retries allowed. */
export const PURE_TRAITS: NodeTraits = {
  pure: true,
  recordsBeforeEffect: false,
  templateFields: 'every',
  links: [],
  credentials: { fields: [], types: [] },
  secretFields: [],
  retries: { allowed: true }
}

const TEMPLATE = Type.String({ pattern: '\\{\\{', description: 'a template, rendered when the node runs' })

/**
 * A field that may also be written as a template (`{{triggerData.amount}}`), checked once
 * rendered; its description and default are the union's, where forms and docs read them.
 */
export function templated<T extends TSchema> (schema: T) {
  const { description, default: fallback } = schema as { description?: string, default?: unknown }
  return Type.Union([schema, TEMPLATE], { ...(description === undefined ? {} : { description }), ...(fallback === undefined ? {} : { default: fallback }) })
}

/** A node definition, typed by its `type` so that the catalogue can check it has every type's. */
export const defineNode = <const T extends string>(definition: NodeDefinition<T>): NodeDefinition<T> => definition

const anyCasePattern = (value: string): string => [...value].map((char) => {
  const lower = char.toLowerCase()
  const upper = char.toUpperCase()
  return lower === upper ? char.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : `[${lower}${upper}]`
}).join('')

/** One of `values`, in any case (executors normalise it, as they always have); `examples` lists them for forms. */
export const oneOfAnyCase = (values: readonly string[], options: { default?: string, description: string }) =>
  Type.String({ ...options, examples: [...values], pattern: `^(?:${values.map(anyCasePattern).join('|')})$` })
