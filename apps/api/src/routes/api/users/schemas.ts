import { Type, type TInteger } from 'typebox'
import { USER_ROLES } from '@switchboard/core/db'
import { MAX_QUOTA, QUOTA_NAMES, type QuotaName } from '@switchboard/core/users'
import { NewPassword, Timestamp } from '../../../schemas/common.ts'

const quotaDescriptions: Record<QuotaName, string> = {
  runsPerMinute: 'runs /fire and the inbound webhook may start per minute for the user (429 beyond)',
  runsInFlight: 'runs of the user RUNNING at once across workers; 0: no limit but the fair share (runs beyond wait PENDING)',
  waitingRuns: 'runs of the user WAITING at a wait node at once (a wait node beyond fails its run)',
  workflows: 'workflows the user owns',
  credentials: 'credentials the user owns',
  cronWorkflows: 'active CRON workflows the user owns',
  eventListeners: 'active EVENT workflows the user owns',
  knowledgeSources: 'knowledge sources the user added to chat accounts'
}

/** The quotas a user has: their own settings over the installation's defaults (README, Quotas). */
const Quotas = Type.Object(Object.fromEntries(QUOTA_NAMES.map((name) => [name, Type.Integer({ description: quotaDescriptions[name] })])) as Record<QuotaName, TInteger>)

export const User = Type.Object({
  id: Type.String(),
  email: Type.String(),
  role: Type.String(),
  createdAt: Timestamp,
  quotas: Quotas
})

const Role = Type.Enum(USER_ROLES)

export const CreateUserBody = Type.Object({
  email: Type.String({ format: 'email', maxLength: 320 }),
  password: NewPassword('password'),
  role: Type.Optional(Role)
}, { additionalProperties: false })

/** An admin's setting of one quota: a number, or null for the installation's default. */
const quotaSetting = (name: QuotaName) =>
  Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: MAX_QUOTA }), Type.Null()], { description: `${quotaDescriptions[name]}; null: the default` }))

export const UpdateUserBody = Type.Object({
  role: Type.Optional(Role),
  password: Type.Optional(NewPassword('password')),
  quotas: Type.Optional(Type.Object(
    Object.fromEntries(QUOTA_NAMES.map((name) => [name, quotaSetting(name)])) as Record<QuotaName, ReturnType<typeof quotaSetting>>,
    { additionalProperties: false }))
}, { additionalProperties: false })
