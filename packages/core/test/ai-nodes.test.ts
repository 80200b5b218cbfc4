import t from 'tap'
import type { ChatSender } from '../src/chat/sender.ts'
import { aiGenerate } from '../src/engine/nodes/ai-generate.ts'
import { aiReply } from '../src/engine/nodes/ai-reply.ts'
import { NodeError, RetryableNodeError, type NodeContext, type NodeModelProvider, type NodeModelRequest } from '../src/engine/types.ts'

/**
 * What the ai nodes do with what the worker gives them, without a provider or a database: the
 * end-to-end behaviour is tests/e2e/ai-nodes.test.ts.
 */

const failingWith = (kind: string) => async (): Promise<never> => { throw Object.assign(new Error(`the provider: ${kind}`), { kind }) }

function providerAnswering (content: string | null, asked: NodeModelRequest[] = []): NodeModelProvider {
  return {
    model: 'm',
    maxOutputTokens: 500,
    historyMaxChars: 1000,
    complete: async (request) => { asked.push(request); return { content, model: request.model, tokensIn: 3, tokensOut: 4 } }
  }
}

const unusedChat: ChatSender = {
  async sendText () { throw new Error('unused') },
  async sendTemplate () { throw new Error('unused') },
  async sendMedia () { throw new Error('unused') },
  async sendInteractive () { throw new Error('unused') },
  async conversation () { return null },
  async recentMessages () { return { conversationId: null, messages: [] } },
  async draftText () { throw new Error('unused') },
  async handoff () { throw new Error('unused') },
  async markRead () { throw new Error('unused') }
}

function context (config: Record<string, unknown>, ai: NodeModelProvider | null, chat: ChatSender = unusedChat): NodeContext {
  return {
    node: { id: 'n1', type: 'ai_generate', config },
    config,
    rawConfig: config,
    run: { id: 'run-1', workflowId: 'wf-1', userId: 'user-1', triggerData: {}, rawBody: null, depth: 0 },
    result: {},
    log: () => {},
    beforeEffect: async () => {},
    signal: new AbortController().signal,
    deps: { ai, chat, http: undefined as never, code: undefined as never },
    control: {} as NodeContext['control'],
    attempt: 1,
    mayRetry: () => false,
    idempotencyKey: 'run-1:n1'
  }
}

t.test('without a configured model both nodes fail at once, and not as a failure that may pass', async (t) => {
  for (const [node, config] of [[aiGenerate, { prompt: 'x' }], [aiReply, { phone: '15550001111', mode: 'text' }]] as const) {
    const err = await node.execute(context(config, null)).catch((caught: unknown) => caught)
    t.ok(err instanceof NodeError && !(err instanceof RetryableNodeError), node.type)
    t.equal((err as Error).message, 'No AI model is configured (AI_MODEL)')
  }
})

t.test('rate limits, provider failures and time-outs may pass; refusals and answers too large do not', async (t) => {
  for (const kind of ['rate_limited', 'unavailable', 'timeout', 'refused', 'too_large']) {
    const provider = { ...providerAnswering(null), complete: failingWith(kind) }
    const err = await aiGenerate.execute(context({ prompt: 'x' }, provider)).catch((caught: unknown) => caught)
    t.equal(err instanceof RetryableNodeError, ['rate_limited', 'unavailable', 'timeout'].includes(kind), kind)
    t.equal((err as Error).message, `The AI model call failed: the provider: ${kind}`)
  }
})

t.test('ai_generate: bounds of what it asks, an object rendered alone sent as JSON, maxOutputTokens within the setting', async (t) => {
  const asked: NodeModelRequest[] = []
  const provider = providerAnswering('  fine  ', asked)
  const { output } = await aiGenerate.execute(context({ prompt: { order: 7 }, model: 'other', maxOutputTokens: 100 }, provider))
  t.same(output, { text: 'fine', model: 'other', tokensIn: 3, tokensOut: 4 })
  t.same(asked[0]!.messages, [{ role: 'user', content: '{"order":7}' }])
  t.equal(asked[0]!.maxOutputTokens, 100)
  await t.rejects(aiGenerate.execute(context({ prompt: 'x', maxOutputTokens: 501 }, provider)), { message: 'maxOutputTokens 501 is more than AI_MAX_OUTPUT_TOKENS (500)' })
  await t.rejects(aiGenerate.execute(context({ prompt: 'é'.repeat(16 * 1024 + 1) }, provider)), { message: 'prompt is 32770 bytes once rendered: at most 32768' })
  await t.rejects(aiGenerate.execute(context({ prompt: 'x' }, providerAnswering(null))), { message: 'The model gave no answer' })
  t.equal(asked.length, 1, 'nothing asked past a bound')
})

t.test('ai_reply: the reply is cut at 4096 characters; draft mode needs a conversation', async (t) => {
  const { output } = await aiReply.execute(context({ phone: '15550001111', mode: 'text' }, providerAnswering('x'.repeat(5000))))
  t.equal((output as { text: string }).text.length, 4096)
  const asked: NodeModelRequest[] = []
  await t.rejects(aiReply.execute(context({ phone: '15550001111' }, providerAnswering('hi', asked))), { message: 'No conversation with 15550001111 on this account: a draft answers a customer who wrote' })
  t.equal(asked.length, 0)
})
