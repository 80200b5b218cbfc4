import { RE2JS } from 're2js'
import type { AskAnswer } from '../db/schema/asks.ts'

/** What an `ask` node expects of the answer (README, Conversations). */
export const ASK_EXPECTS = ['text', 'number', 'email', 'phone', 'date', 'choice', 'media', 'pattern', 'location', 'flow'] as const
export type AskExpect = typeof ASK_EXPECTS[number]

/** A choice the question offered: a button or a list row. */
export interface AskChoice {
  id: string
  title: string
}

export interface AnswerRules {
  expect: AskExpect
  /** `choice`: the question's buttons or rows. */
  choices?: readonly AskChoice[]
  /** `pattern`: compiled RE2, matched against the whole answer. */
  pattern?: RE2JS
}

/** The answer read: valid with its parsed `value`, or not. */
export type ReadAnswer = { valid: true, value: unknown } | { valid: false }

const INVALID: ReadAnswer = { valid: false }
const valid = (value: unknown): ReadAnswer => ({ valid: true, value })

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,253}\.[^\s@]{2,63}$/u
const NUMBER = /^[+-]?(?:\d{1,3}(?:[ ,]\d{3})+|\d+)(?:\.\d+)?$/u

function dateOf (text: string): string | null {
  // Year first (2026-11-29), else day first (29/11/2026, 29.11.2026, 29-11-2026): most chat markets write the day first.
  const iso = /^(\d{4})-(\d{1,2})-(\d{1,2})$/u.exec(text)
  const dayFirst = /^(\d{1,2})[./-](\d{1,2})[./-](\d{4})$/u.exec(text)
  const [year, month, day] = iso !== null ? [iso[1], iso[2], iso[3]] : dayFirst !== null ? [dayFirst[3], dayFirst[2], dayFirst[1]] : []
  if (year === undefined || month === undefined || day === undefined) return null
  const date = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)))
  if (date.getUTCMonth() !== Number(month) - 1 || date.getUTCDate() !== Number(day)) return null
  return date.toISOString().slice(0, 10)
}

/**
 * Reads an answer as `rules` expect it: `value` is what a workflow uses (a number, a normalised
 * email or phone, an ISO date, the chosen id, the media, the place, a completed flow's response). Text
 * is trimmed and its inner white space collapsed first.
 */
export function readAnswer (answer: AskAnswer, rules: AnswerRules): ReadAnswer {
  const text = answer.text.trim().replace(/\s+/gu, ' ')
  switch (rules.expect) {
    case 'text':
      return answer.media === undefined && answer.details === undefined && text !== '' ? valid(text) : INVALID
    case 'number':
      return NUMBER.test(text) ? valid(Number(text.replace(/[ ,]/gu, ''))) : INVALID
    case 'email':
      return EMAIL.test(text) ? valid(text.toLowerCase()) : INVALID
    case 'phone': {
      const digits = text.replace(/^\+/u, '').replace(/[\s().-]/gu, '')
      return /^\d{6,15}$/u.test(digits) ? valid(`+${digits}`) : INVALID
    }
    case 'date': {
      const date = dateOf(text)
      return date === null ? INVALID : valid(date)
    }
    case 'choice': {
      const tapped = answer.interactive?.id
      const folded = text.toLowerCase()
      const choice = (rules.choices ?? []).find((option) => option.id === tapped || option.id.toLowerCase() === folded || option.title.trim().toLowerCase() === folded)
      return choice === undefined ? INVALID : valid(choice.id)
    }
    case 'media':
      return answer.media === undefined ? INVALID : valid(answer.media)
    case 'pattern':
      return rules.pattern !== undefined && rules.pattern.matches(text) ? valid(text) : INVALID
    case 'location':
      return answer.details?.location === undefined ? INVALID : valid(answer.details.location)
    case 'flow': {
      // A reply whose response was not kept (README, Flows: bounds) gives the workflow nothing to read.
      const reply = answer.details?.flowReply
      return reply === undefined || reply.unreadable !== undefined ? INVALID : valid(reply.response)
    }
  }
}

/** Whether the answer is one of the exit keywords: the whole text, in any case. */
export function isExitKeyword (answer: AskAnswer, keywords: readonly string[]): boolean {
  const text = answer.text.trim().replace(/\s+/gu, ' ').toLowerCase()
  return text !== '' && keywords.some((keyword) => keyword.trim().replace(/\s+/gu, ' ').toLowerCase() === text)
}
