import { createHash, randomBytes } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { DbOrTx } from '../db/client.ts'
import { jsonb } from '../db/sql.ts'
import { storableJson, storableText } from '../db/storable.ts'
import type { ApprovalDecision } from '../db/schema/runs.ts'
import { RUN_WAITING_EVENT } from '../events/outbox.ts'
import { createId } from '../ids.ts'
import type { QueueName } from '../queues/catalog.ts'
import { isAdmin, type Viewer, workflowLimit } from '../users/viewer.ts'

/**
 * Approvals (engine/README.md, "Waits and resumes"): a run waiting at an approval node has one
 * row of `run_waits`, decided once, by whichever comes first of the resume route (owner, admin),
 * the public resume URL (its token) and the timeout. The decision is the update of that row,
 * guarded by its being undecided and unexpired and the run WAITING at its node, so a second
 * decision, a late one and one racing the timeout change nothing.
 */

/** Public resume tokens: `rst_` and 32 random bytes (base64url), stored as their SHA-256 digest. */
const TOKEN_PREFIX = 'rst_'
export const RESUME_TOKEN_PATTERN = '^rst_[A-Za-z0-9_-]{43}$'

const digest = (token: string): string => createHash('sha256').update(token).digest('hex')

export interface Approval {
  decision: ApprovalDecision | 'timeout' | null
  data: unknown
  decidedBy: string | null
  decidedAt: Date | null
  expiresAt: Date
}

/** A decision taken: the run to wake. */
export interface Decided {
  runId: string
  nodeId: string
  queue: QueueName
  decision: ApprovalDecision
}

export interface OpenApproval {
  runId: string
  nodeId: string
  userId: string
  workflowId: string
  message: string | null
  expiresAt: Date
}

/** A pending approval as `GET /api/automation/approvals` lists it. */
export interface PendingApproval {
  runId: string
  workflowId: string
  nodeId: string
  message: string | null
  expiresAt: Date
  createdAt: Date
}

/** Who decides: a user through the resume route, or whoever holds the public token. */
export type Decider = { viewer: Viewer, runId: string, nodeId: string } | { token: string }

export function runWaits (db: DbOrTx) {
  return {
    async get (runId: string, nodeId: string): Promise<Approval | undefined> {
      const [row] = await db.execute<Approval & Record<string, unknown>>(sql`
        select decision, data, decided_by as "decidedBy", decided_at as "decidedAt", expires_at as "expiresAt"
        from run_waits where run_id = ${runId} and node_id = ${nodeId}
      `)
      return row === undefined ? undefined : { ...row, expiresAt: new Date(row.expiresAt), decidedAt: row.decidedAt === null ? null : new Date(row.decidedAt) }
    },

    /**
     * Opens the approval (a new token; one opened before and undecided gets a new token, its old
     * link dead: only its digest was kept) with its `workflow.run.waiting` event (the outbox).
     * Returns the token and the event's id (null: the workflow listens to it), or undefined when it was decided already.
     */
    async open (approval: OpenApproval): Promise<{ token: string, eventId: string | null } | undefined> {
      const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`
      const eventId = createId()
      const [row] = await db.execute<{ opened: boolean, eventId: string | null }>(sql`
        with opened as (
          insert into run_waits (run_id, node_id, user_id, token_hash, message, expires_at)
          values (${approval.runId}, ${approval.nodeId}, ${approval.userId}, ${digest(token)}, ${approval.message === null ? null : storableText(approval.message)}, ${approval.expiresAt.toISOString()}::timestamptz)
          on conflict (run_id, node_id) do update set token_hash = excluded.token_hash, message = excluded.message, expires_at = excluded.expires_at
          where run_waits.decided_at is null
          returning run_id
        ), emitted as (
          insert into events (id, name, user_id, payload)
          select ${eventId}, ${RUN_WAITING_EVENT}, ${approval.userId}, ${jsonb({
            runId: approval.runId,
            workflowId: approval.workflowId,
            nodeId: approval.nodeId,
            message: approval.message,
            expiresAt: approval.expiresAt.toISOString(),
            resumePath: `/webhook/resume/${token}`
          })}
          from opened join workflows on workflows.id = ${approval.workflowId}
          -- A workflow listening to this event is not told of its own waits, so that waits cannot loop.
          where (workflows.trigger_config->>'eventName') is distinct from ${RUN_WAITING_EVENT}
          returning id
        )
        select exists (select 1 from opened) as opened, (select id from emitted) as "eventId"
      `)
      return row?.opened === true ? { token, eventId: row.eventId } : undefined
    },

    /** Decides an approval whose time ran out as `timeout`; the approval as it is then. */
    async expire (runId: string, nodeId: string): Promise<Approval | undefined> {
      await db.execute(sql`
        update run_waits set decision = 'timeout', decided_at = now()
        where run_id = ${runId} and node_id = ${nodeId} and decided_at is null and expires_at <= now()
      `)
      return await this.get(runId, nodeId)
    },

    /**
     * Decides an approval the run waits for now. `missing`: no such run for the viewer, or no
     * such token; `not-waiting`: the run (or the token's run) does not wait at that node now
     * (decided, expired, ended, elsewhere).
     */
    async decide (decider: Decider, decision: ApprovalDecision, data: unknown): Promise<Decided | 'missing' | 'not-waiting'> {
      const target = 'token' in decider
        ? sql`select run_id, node_id from run_waits where token_hash = ${digest(decider.token)}`
        : sql`select runs.id as run_id, ${decider.nodeId}::text as node_id from runs
            where runs.id = ${decider.runId} ${isAdmin(decider.viewer) ? sql`` : sql`and runs.user_id = ${decider.viewer.id}`}
              and ${workflowLimit(decider.viewer, sql`runs.workflow_id`)}`
      const decidedBy = 'token' in decider ? null : decider.viewer.id
      const [row] = await db.execute<{ found: boolean, runId: string | null, nodeId: string | null, queue: QueueName | null }>(sql`
        with target as (${target}), decided as (
          update run_waits set decision = ${decision}, data = ${data === undefined ? null : storableJson(data)}::jsonb, decided_by = ${decidedBy}::text, decided_at = now()
          from target, runs
          where run_waits.run_id = target.run_id and run_waits.node_id = target.node_id and runs.id = target.run_id
            and run_waits.decided_at is null and run_waits.expires_at > now()
            and runs.status = 'WAITING' and runs.current_node_id = run_waits.node_id
          returning run_waits.run_id, run_waits.node_id, runs.queue
        ), logged as (
          insert into run_logs (run_id, node_id, level, message)
          select run_id, node_id, 'INFO', ${`Decision received: ${decision}`} from decided
        )
        select exists (select 1 from target) as found, decided.run_id as "runId", decided.node_id as "nodeId", decided.queue
        from (select 1) as one left join decided on true
      `)
      if (row === undefined || !row.found) return 'missing'
      if (row.runId === null || row.nodeId === null || row.queue === null) return 'not-waiting'
      return { runId: row.runId, nodeId: row.nodeId, queue: row.queue, decision }
    },

    /** The approvals `viewer` may decide, oldest first (admins: everyone's). */
    async pending (viewer: Viewer, limit: number, offset: number): Promise<PendingApproval[]> {
      const rows = await db.execute<PendingApproval & Record<string, unknown>>(sql`
        select run_waits.run_id as "runId", runs.workflow_id as "workflowId", run_waits.node_id as "nodeId", run_waits.message,
          run_waits.expires_at as "expiresAt", run_waits.created_at as "createdAt"
        from run_waits join runs on runs.id = run_waits.run_id
        where run_waits.decided_at is null and run_waits.expires_at > now() and runs.status = 'WAITING'
          ${isAdmin(viewer) ? sql`` : sql`and run_waits.user_id = ${viewer.id}`} and ${workflowLimit(viewer, sql`runs.workflow_id`)}
        order by run_waits.created_at, run_waits.run_id limit ${limit} offset ${offset}
      `)
      return rows.map((row) => ({ ...row, expiresAt: new Date(row.expiresAt), createdAt: new Date(row.createdAt) }))
    }
  }
}

export type RunWaits = ReturnType<typeof runWaits>
