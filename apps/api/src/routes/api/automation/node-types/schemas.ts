import { Type } from 'typebox'
import { NODE_CATEGORIES } from '@switchboard/core/engine'

const LinkField = Type.Object({ field: Type.String(), kind: Type.Union([Type.Literal('node'), Type.Literal('map'), Type.Literal('list')]) })
const SecretField = Type.Object({ field: Type.String(), kind: Type.String(), keeps: Type.Optional(Type.Array(Type.String())) })

/** docs/nodes.md explains each trait. */
const NodeTraits = Type.Object({
  pure: Type.Boolean({ description: 'No outside effect: runs in memory between checkpoints.' }),
  recordsBeforeEffect: Type.Boolean({ description: 'Writes the run’s checkpoint itself right before its outside effect.' }),
  templateFields: Type.Union([Type.Literal('every'), Type.Array(Type.String())], { description: 'The config fields rendered as templates.' }),
  links: Type.Array(LinkField, { description: 'Config fields that hold node ids (branches), in the order the engine follows them.' }),
  credentials: Type.Union([
    Type.Literal('never'),
    Type.Object({ fields: Type.Array(Type.String()), types: Type.Array(Type.String()) })
  ], { description: 'The fields that may refer to credentials, and the credential types its credential field takes.' }),
  secretFields: Type.Array(SecretField, { description: 'Where a secret may be written: an export removes literal values there.' }),
  retries: Type.Object({
    allowed: Type.Boolean(),
    defaultTimeoutMs: Type.Optional(Type.Number()),
    legacyRetries: Type.Optional(Type.Boolean())
  }, { description: 'Whether retry and timeoutMs apply, and the default time limit.' }),
  flow: Type.Optional(Type.Union([Type.Literal('fork'), Type.Literal('join')], { description: 'fork: starts parallel branches (its list link); join: where they meet.' })),
  resultPaths: Type.Optional(Type.Array(Type.String(), { description: 'Config fields that name a value of the run by its path unless written as a template: a node rename rewrites them.' })),
  codeFields: Type.Optional(Type.Array(Type.String(), { description: 'Config fields holding source code: a node rename lists the mentions of its id there instead of rewriting them.' })),
  callsWorkflow: Type.Optional(Type.String({ description: 'The config field naming the workflow it runs as a child run: the builder offers the user’s workflows there.' })),
  toolWorkflows: Type.Optional(Type.String({ description: 'The config field listing the AGENT workflows it calls as tools: the builder offers the user’s AGENT workflows there.' }))
})

export const NodeTypes = Type.Object({
  nodeTypes: Type.Array(Type.Object({
    type: Type.String(),
    category: Type.Enum(NODE_CATEGORIES, { description: 'Where the console’s palette lists it; types come grouped by category, in the palette’s order.' }),
    description: Type.String(),
    configSchema: Type.Object({}, { additionalProperties: true, description: 'The config’s JSON Schema.' }),
    example: Type.Object({}, { additionalProperties: true, description: 'An example config: the builder shows its values as the fields’ placeholders.' }),
    traits: NodeTraits
  }))
})
