import type { NodeExecutor } from '../types.ts'
import { optionalObject } from './config.ts'

/** Names values for later nodes: the output is the rendered `values`. */
export const set: NodeExecutor<'set'> = {
  type: 'set',
  async execute ({ config }) {
    return { output: optionalObject(config, 'values') ?? {} }
  }
}
