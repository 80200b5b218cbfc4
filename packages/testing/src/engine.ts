import { createHttpClient, createRunEngine, type NodeDependencies, type RunEngine, type RunEngineOptions } from '@switchboard/core/engine'
import { createLogger } from '@switchboard/core/logger'
import type { Teardown } from './teardown.ts'

const unused = async (): Promise<never> => { throw new Error('unused') }

/** A chat that no node of the test sends on: any call throws `unused`. */
const unusedChat: NodeDependencies['chat'] = {
  sendText: unused,
  sendTemplate: unused,
  sendMedia: unused,
  sendInteractive: unused,
  conversation: unused,
  recentMessages: unused,
  draftText: unused,
  handoff: unused,
  markRead: unused
}

/** What a test gives the engine: the database and queues, and whichever other options it cares about. */
export type TestEngineOptions = Pick<RunEngineOptions, 'db' | 'queues'> &
  Partial<Omit<RunEngineOptions, 'db' | 'queues' | 'nodes'>> &
  { nodes?: Partial<NodeDependencies> }

/**
 * The run engine of a packages/core test, on the file's database and queues
 * (createCoreTestContext): a silent logger, no events dispatched, no model, a chat and a
 * code sandbox that throw `unused` (code nodes are the code-node tests'), and an http client
 * that may reach loopback (the tests' sinks), closed at teardown. Every other option is the
 * engine's default unless the test gives it.
 */
export function createTestEngine (t: Teardown, { nodes, ...options }: TestEngineOptions): RunEngine {
  let http = nodes?.http
  if (http === undefined) {
    const client = createHttpClient({ allowPrivate: true })
    t.teardown(client.close)
    http = client.dispatcher
  }
  return createRunEngine({
    logger: createLogger('silent', 'test-engine'),
    dispatchEvents: async () => {},
    ...options,
    nodes: { chat: nodes?.chat ?? unusedChat, code: nodes?.code ?? { run: unused }, ai: nodes?.ai ?? null, http }
  })
}
