import { Type } from 'typebox'
import { ASK_EXPECTS, isExitKeyword, readAnswer, type AnswerRules, type AskChoice } from '../../chat/answers.ts'
import type { Ask } from '../../chat/asks.ts'
import { INTERACTIVE_LIMITS as LIMITS } from '../../chat/interactive.ts'
import { WINDOW_MS } from '../../chat/window.ts'
import { NodeError, type NodeResult } from '../types.ts'
import { recipientLabel } from '../../chat/sender.ts'
import { checkRecipient, CUSTOMER_FIELDS, customerOf, sendRetryably } from './chat-send.ts'
import { compileMatchPattern } from './condition.ts'
import { optionalNumber, optionalString, requiredString } from './config.ts'
import { defineNode, oneOfAnyCase, templated } from './definition.ts'
import { BUTTON, FLOW, LIST } from './send-chat-interactive.ts'

const MINUTE_MS = 60_000
/** How long an ask waits for each answer: 3 seconds to 30 days. */
const MIN_TIMEOUT_MINUTES = 0.05
const MAX_TIMEOUT_MINUTES = 30 * 24 * 60
const DEFAULT_TIMEOUT_MINUTES = 24 * 60
const MAX_ATTEMPTS = 10
const DEFAULT_ATTEMPTS = 3
const EXIT_KEYWORDS_MAX = 20

const TEMPLATE = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 512, description: 'An approved template’s name.' }),
  lang: Type.Optional(Type.String({ minLength: 1, maxLength: 16, description: 'Its language code; en_US when absent.' })),
  components: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 100, description: 'Its parameters, as send_chat_template takes them.' }))
}, { description: 'Sent instead of the question when the customer has not written for 24 hours (the platform allows only a template then).' })

/** The ids and titles the question offers, for `expect: choice`. */
function choicesOf (config: Record<string, unknown>): AskChoice[] {
  const buttons = Array.isArray(config.buttons) ? config.buttons as AskChoice[] : []
  const sections = typeof config.list === 'object' && config.list !== null ? (config.list as { sections?: Array<{ rows?: AskChoice[] }> }).sections ?? [] : []
  return [...buttons, ...sections.flatMap((section) => section.rows ?? [])]
}

function rulesOf (config: Record<string, unknown>): AnswerRules {
  const expect = ASK_EXPECTS.find((value) => value === String(config.expect ?? 'text').toLowerCase())
  if (expect === undefined) throw new NodeError(`expect must be one of ${ASK_EXPECTS.join(', ')}`)
  if (expect === 'pattern') {
    try {
      return { expect, pattern: compileMatchPattern(requiredString(config, 'pattern')) }
    } catch (err) {
      throw new NodeError((err as Error).message.replace(/^value/u, 'pattern'))
    }
  }
  if (expect === 'choice') {
    const choices = choicesOf(config)
    if (choices.length === 0) throw new NodeError('expect choice needs buttons or a list to choose from')
    return { expect, choices }
  }
  return { expect }
}

function exitKeywordsOf (config: Record<string, unknown>): string[] {
  const keywords = config.exitKeywords
  if (keywords === undefined || keywords === null) return []
  if (!Array.isArray(keywords) || keywords.length > EXIT_KEYWORDS_MAX) throw new NodeError(`exitKeywords must be a list of at most ${EXIT_KEYWORDS_MAX} words`)
  return keywords.map(String)
}

/** Where a link field points, or the run's end when the author left it out. */
const linkOr = (config: Record<string, unknown>, field: string, output: unknown): NodeResult =>
  typeof config[field] === 'string' ? { output, next: config[field] as string, handles: [field] } : { output, ends: true }

/**
 * Asks the run's customer a question and waits for their next message in the conversation
 * (README, Conversations): the run is WAITING (no worker held) until the inbound message is
 * taken by this ask (chat/asks.ts), the timeout, a newer ask of the conversation, or the customer
 * leaving (an exit keyword, opting out). Each time the node runs it reads its ask and goes on
 * from there, so it is re-entrant (engine/README.md, "Waits and resumes"): a question is sent
 * once per attempt (its `asked` count), an answer read once (`answered` → `done` or `waiting`).
 */
export const ask = defineNode({
  type: 'ask',
  category: 'Chat',
  description: 'Asks the customer a question (text, buttons, a list, a flow; a template outside the 24-hour window) and waits for the answer, checked as `expect` says; asks again when it is not valid.',
  config: {
    phone: CUSTOMER_FIELDS.phone,
    contactId: CUSTOMER_FIELDS.contactId,
    text: templated(Type.String({ minLength: 1, maxLength: LIMITS.body, description: 'The question (the body above buttons, a list or a flow’s button).' })),
    header: Type.Optional(templated(Type.String({ minLength: 1, maxLength: LIMITS.header, description: 'With buttons, a list or a flow: a title above the question.' }))),
    footer: Type.Optional(templated(Type.String({ minLength: 1, maxLength: LIMITS.footer, description: 'With buttons, a list or a flow: a line under it.' }))),
    buttons: Type.Optional(templated(Type.Array(BUTTON, { minItems: 1, maxItems: LIMITS.buttons, description: `1 to ${LIMITS.buttons} reply buttons.` }))),
    list: Type.Optional(templated(LIST)),
    flow: Type.Optional(templated(FLOW)),
    template: Type.Optional(templated(TEMPLATE)),
    expect: Type.Optional(oneOfAnyCase(ASK_EXPECTS, { default: 'text', description: 'What a valid answer is: text, a number, an email, a phone number, a date, one of the choices (a tap, or its title typed), media, text matching `pattern`, a shared location, or a completed flow.' })),
    pattern: Type.Optional(templated(Type.String({ minLength: 1, maxLength: 1000, description: 'With expect pattern: an RE2 expression the whole answer must match.' }))),
    invalidReply: Type.Optional(templated(Type.String({ minLength: 1, maxLength: 4096, description: 'Sent after an answer that is not valid, before the question is asked again.' }))),
    maxAttempts: Type.Optional(templated(Type.Number({ minimum: 1, maximum: MAX_ATTEMPTS, default: DEFAULT_ATTEMPTS, description: 'Answers read before the node goes on at `invalid`.' }))),
    timeoutMinutes: Type.Optional(templated(Type.Number({ minimum: MIN_TIMEOUT_MINUTES, maximum: MAX_TIMEOUT_MINUTES, default: DEFAULT_TIMEOUT_MINUTES, description: 'How long each question waits for its answer (3 seconds to 30 days).' }))),
    exitKeywords: Type.Optional(templated(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: EXIT_KEYWORDS_MAX, description: 'Answers (the whole message, any case) that end the wait at `exited`.' }))),
    typing: Type.Optional(templated(Type.Boolean({ default: false, description: 'Mark the answer read with the typing indicator while the workflow works on it.' }))),
    invalid: Type.Optional(Type.String({ description: 'The node after `maxAttempts` answers that were not valid; absent: the run ends.' })),
    timedOut: Type.Optional(Type.String({ description: 'The node after no answer in time, or a newer ask of the conversation; absent: the run ends.' })),
    exited: Type.Optional(Type.String({ description: 'The node after an exit keyword or the customer opting out; absent: the run ends.' })),
    accountId: CUSTOMER_FIELDS.accountId
  },
  example: { text: 'What is your order number?', expect: 'pattern', pattern: '[0-9]{4,10}', invalidReply: 'An order number has digits only.', exitKeywords: ['menu', 'never mind'] },
  traits: {
    pure: false,
    recordsBeforeEffect: false,
    templateFields: 'every',
    links: [{ field: 'invalid', kind: 'node' }, { field: 'timedOut', kind: 'node' }, { field: 'exited', kind: 'node' }],
    credentials: 'never',
    secretFields: [],
    retries: { allowed: true }
  },
  validate (config) {
    checkRecipient(config, false)
  },
  async execute (context): Promise<NodeResult> {
    const { node, config, run, control, deps, log } = context
    const customer = { userId: run.userId, ...customerOf(config, run.triggerData) }
    const rules = rulesOf(config)
    const exitKeywords = exitKeywordsOf(config)
    const maxAttempts = optionalNumber(config, 'maxAttempts', 1, MAX_ATTEMPTS) ?? DEFAULT_ATTEMPTS
    const timeoutMs = (optionalNumber(config, 'timeoutMinutes', MIN_TIMEOUT_MINUTES, MAX_TIMEOUT_MINUTES) ?? DEFAULT_TIMEOUT_MINUTES) * MINUTE_MS

    /** The customer's conversation as this execution first read it. */
    let conversationRead: ReturnType<typeof deps.chat.conversation> | undefined
    const conversationAtStart = async () => await (conversationRead ??= deps.chat.conversation(customer))

    /**
     * Whether the question must be the template: the customer has not written for 24 hours. A question
     * asked again follows their answer, so only the first one can be outside the window.
     */
    async function outsideWindow (attempt: number): Promise<boolean> {
      if (attempt > 0) return false
      const lastIncomingAt = (await conversationAtStart())?.lastIncomingAt
      return lastIncomingAt == null || Date.now() - lastIncomingAt.getTime() >= WINDOW_MS
    }

    /** The question of `attempt` (0 the first), after the invalid reply for the one before it. */
    async function sendQuestion (attempt: number): Promise<void> {
      const key = `${context.idempotencyKey}:${attempt}`
      const invalidReply = optionalString(config, 'invalidReply')
      if (attempt > 0 && invalidReply !== undefined) {
        await context.beforeEffect(`Answer ${attempt} not valid: replying to ${recipientLabel(customer)}`)
        await sendRetryably(async () => await deps.chat.sendText({ ...customer, run, text: invalidReply }, { idempotencyKey: `${key}:invalid`, signal: context.signal }))
      }
      const template = config.template as { name: string, lang?: string, components?: unknown[] } | undefined
      const asTemplate = template !== undefined && await outsideWindow(attempt)
      await context.beforeEffect(`Asking ${recipientLabel(customer)} (attempt ${attempt + 1} of ${maxAttempts})`)
      const options = { idempotencyKey: key, signal: context.signal }
      await sendRetryably(async () => {
        if (asTemplate) {
          return await deps.chat.sendTemplate({ ...customer, run, templateName: template.name, lang: template.lang ?? 'en_US', components: template.components }, options)
        }
        const type = config.flow !== undefined ? 'flow' : config.buttons !== undefined ? 'button' : config.list !== undefined ? 'list' : undefined
        if (type === undefined) return await deps.chat.sendText({ ...customer, run, text: requiredString(config, 'text') }, options)
        return await deps.chat.sendInteractive({
          ...customer,
          run,
          interactive: { type, body: config.text, header: config.header, footer: config.footer, buttons: config.buttons, list: config.list, flow: config.flow }
        }, options)
      })
      await control.asks.markAsked(run.id, node.id, attempt + 1)
    }

    const waiting = (found: Ask): NodeResult => ({
      output: { status: 'waiting', conversationId: found.conversationId, attempts: found.attempts, until: found.expiresAt.toISOString() },
      suspendUntil: found.expiresAt,
      suspendKey: `ask:${found.attempts}`
    })

    /** Goes on from where the ask stands. */
    async function goOn (found: Ask): Promise<NodeResult> {
      switch (found.status) {
        case 'waiting': {
          if (found.asked < found.attempts + 1) await sendQuestion(found.attempts)
          if (found.expiresAt.getTime() > Date.now()) return waiting(found)
          const expired = await control.asks.expire(run.id, node.id)
          if (expired === undefined || expired.status === 'waiting') throw new NodeError('the ask could not be ended at its timeout')
          return await goOn(expired)
        }
        case 'answered': {
          const answer = found.answer
          if (answer === null) throw new NodeError('the ask was answered without an answer')
          // A courtesy: a read receipt the platform refuses never fails the ask.
          if (config.typing === true) await deps.chat.markRead(customer).catch((err: unknown) => { log('WARN', `The answer could not be marked read: ${(err as Error).message}`) })
          if (isExitKeyword(answer, exitKeywords)) {
            await control.asks.settle(run.id, node.id, 'exited', found.attempts)
            return await goOn({ ...found, status: 'exited' })
          }
          const attempts = found.attempts + 1
          if (readAnswer(answer, rules).valid || attempts >= maxAttempts) {
            await control.asks.settle(run.id, node.id, 'done', attempts)
            return await goOn({ ...found, status: 'done', attempts })
          }
          const expiresAt = new Date(Date.now() + timeoutMs)
          if (!await control.asks.reopen(run.id, node.id, attempts, expiresAt)) {
            const now = await control.asks.get(run.id, node.id)
            if (now === undefined) throw new NodeError('the ask is gone')
            return await goOn(now)
          }
          log('INFO', `Answer ${attempts} not valid (expected ${rules.expect}): asking again`)
          return await goOn({ ...found, status: 'waiting', attempts, answer: null, expiresAt })
        }
        case 'done': {
          const answer = found.answer
          if (answer === null) throw new NodeError('the ask was answered without an answer')
          const read = readAnswer(answer, rules)
          const output = {
            answer: answer.text,
            value: read.valid ? read.value : null,
            messageId: answer.messageId,
            attempts: found.attempts,
            ...(answer.interactive !== undefined && { interactive: answer.interactive }),
            ...(answer.media !== undefined && { media: answer.media }),
            ...(answer.details?.location !== undefined && { location: answer.details.location }),
            ...(answer.details?.flowReply !== undefined && { flowReply: answer.details.flowReply })
          }
          if (read.valid) return { output, next: null, handles: ['next', 'answered'] }
          log('INFO', `No valid answer in ${found.attempts} attempts`)
          return linkOr(config, 'invalid', output)
        }
        case 'timeout':
        case 'superseded':
          log('INFO', found.status === 'timeout' ? 'No answer in time' : 'A newer ask of the conversation took over')
          return linkOr(config, 'timedOut', { reason: found.status, attempts: found.attempts })
        case 'exited':
          return linkOr(config, 'exited', { reason: found.answer === null ? 'opted_out' : 'exit_keyword', answer: found.answer?.text ?? null, attempts: found.attempts })
      }
    }

    let found = await control.asks.get(run.id, node.id)
    if (found === undefined) {
      // A customer who never wrote has no conversation until the question (a template) is sent:
      // otherwise the ask opens first, so that no answer can come before it.
      const existing = await conversationAtStart()
      const askedFirst = existing === null
      if (askedFirst) await sendQuestion(0)
      const conversation = existing ?? await deps.chat.conversation(customer)
      if (conversation === null) throw new NodeError(`No conversation with ${recipientLabel(customer)} after the question was sent`)
      const { superseded } = await control.asks.open(run.id, node.id, conversation.id, new Date(Date.now() + timeoutMs))
      if (askedFirst) await control.asks.markAsked(run.id, node.id, 1)
      for (const wake of superseded) await control.wake(wake)
      found = await control.asks.get(run.id, node.id)
      if (found === undefined) throw new NodeError('the ask could not be opened')
    }
    return await goOn(found)
  }
})
