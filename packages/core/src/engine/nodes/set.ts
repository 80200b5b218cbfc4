import { Type } from 'typebox'
import { optionalObject } from './config.ts'
import { defineNode, PURE_TRAITS } from './definition.ts'

/** Names values for later nodes: the output is the rendered `values`. */
export const set = defineNode({
  type: 'set',
  category: 'Data',
  description: 'Computes named values from templates; later nodes read them as {{<node id>.<name>}}.',
  config: {
    values: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'The output: any JSON, with templates in its strings.', default: {} }))
  },
  example: { values: { greeting: 'Hello {{triggerData.name}}' } },
  traits: PURE_TRAITS,
  async execute ({ config }) {
    return { output: optionalObject(config, 'values') ?? {} }
  }
})
