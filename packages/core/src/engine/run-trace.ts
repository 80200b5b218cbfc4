import { context, trace, type Span } from '@opentelemetry/api'
import type { LogLevel } from '../db/schema/runs.ts'
import type { WorkflowNode } from '../db/schema/workflows.ts'
import type { Logger } from '../logger.ts'
import type { ClaimKind, LogLine } from './run-store.ts'
import { isNodeType } from './nodes/index.ts'
import { nodeDuration, runDuration, runsFinished } from '../observability/metrics.ts'
import { recordError, startSpan, traceparentOf } from '../observability/tracing.ts'

type Level = 'debug' | 'info' | 'warn' | 'error'

const LEVELS: Record<LogLevel, Level> = { DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' }

/**
 * Node lines go to the process log at debug (a busy worker writes several per node), unless
 * they warn or report a failure; run-level lines keep their level.
 */
const processLevel = (line: LogLine): Level => line.nodeId !== null && (line.level === 'INFO' || line.level === 'DEBUG') ? 'debug' : LEVELS[line.level]

export interface TracedRun {
  id: string
  workflowId: string
  /** When the run first started (a resumed run keeps it), for its duration. */
  startedAt: Date
  kind: ClaimKind
}

const CLAIM_LINES: Record<Exclude<ClaimKind, 'retry'>, string> = {
  start: 'Run started',
  resume: 'Run resumed',
  takeover: 'Run taken over after its worker stopped'
}

/** How a node's span ended: as its metric's outcome, or `stopped` (the run was cancelled or taken over meanwhile). */
type NodeSpanOutcome = 'success' | 'failure' | 'waiting' | 'stopped'

/**
 * The spans of one execution of a run, below its `run.execute` (`span`): one per node executed,
 * and the traceparent a job that continues the execution carries.
 */
function runSpans (span: Span) {
  let awaitingWrite: Array<{ span: Span, endedAt: Date }> | undefined
  return {
    /** The span of one execution of `node`, child of the run's. */
    node (node: WorkflowNode): Span {
      const type = isNodeType(node.type) ? node.type : 'unknown'
      return startSpan(`node ${type}`, { 'switchboard.node.id': node.id, 'switchboard.node.type': type }, trace.setSpan(context.active(), span))
    },
    /**
     * `unwritten`: the node ran in memory before the run's first write. Its span ends with that
     * write (`written`); if the execution is handed back to the usual claim first, which runs the
     * nodes again, the span is never ended, so never exported: each node shows once.
     */
    nodeEnded (nodeSpan: Span, outcome: NodeSpanOutcome, { error, unwritten }: { error?: unknown, unwritten: boolean }): void {
      nodeSpan.setAttribute('switchboard.node.outcome', outcome)
      if (outcome === 'failure') recordError(nodeSpan, error)
      if (unwritten) (awaitingWrite ??= []).push({ span: nodeSpan, endedAt: new Date() })
      else nodeSpan.end()
    },
    /** The run's first write is done: the spans of the nodes run in memory before it end, at the times they ended. */
    written (): void {
      if (awaitingWrite === undefined) return
      for (const { span: nodeSpan, endedAt } of awaitingWrite) nodeSpan.end(endedAt)
      awaitingWrite = undefined
    },
    /** The traceparent of the run's span, for a job that continues this execution (a resume). */
    traceparent: (): string | undefined => traceparentOf(span)
  }
}

/**
 * What the engine tells operators about one run, besides its run_logs rows: the same lines in
 * the process log with runId, workflowId, nodeId and the request id bound, the run's metrics,
 * and, while tracing is on (`span`: the execution's `run.execute`), a span per node.
 */
export function traceRun (logger: Logger, run: TracedRun, requestId?: string, span?: Span) {
  // While tracing is on, its lines name the active span (logger.ts): run.execute, or the node's while a node runs.
  const log = logger.child({ runId: run.id, workflowId: run.workflowId, ...(requestId !== undefined && { requestId }) })
  span?.setAttribute('switchboard.workflow.id', run.workflowId)
  return {
    log,
    /**
     * The line the claim wrote ('Run started', 'Run resumed', 'Run taken over', or `retryLine`
     * when the same job claims it again after a failed attempt) and those the first step adds.
     */
    claimed (retryLine?: string): LogLine[] {
      if (run.kind === 'retry') log.warn(retryLine ?? 'Run resumed after its job failed')
      else log.info(CLAIM_LINES[run.kind])
      // The request that started the run, in its run_logs too: one id from the api's log to the run.
      if (run.kind !== 'start' || requestId === undefined) return []
      return [{ nodeId: null, level: 'INFO', message: `Request id: ${requestId}`, at: new Date() }]
    },
    /** Lines about to be written with a step. */
    write (lines: readonly LogLine[]): void {
      for (const line of lines) {
        const level = processLevel(line)
        if (!log.isLevelEnabled(level)) continue
        if (line.nodeId === null) log[level](line.message)
        else log[level]({ nodeId: line.nodeId }, line.message)
      }
    },
    node (type: string, outcome: 'success' | 'failure' | 'waiting', milliseconds: number): void {
      nodeDuration.observe({ node_type: isNodeType(type) ? type : 'unknown', outcome }, milliseconds / 1000)
    },
    /** The run's spans while tracing is on (`span`: its execution's `run.execute`); undefined while it is off. */
    spans: span === undefined ? undefined : runSpans(span),
    /** The engine ended the run: SUCCESS is counted here, FAILED where every failure is (failRun). */
    ended (status: 'SUCCESS' | 'FAILED'): void {
      const seconds = (Date.now() - run.startedAt.getTime()) / 1000
      runDuration.observe({ status }, seconds)
      if (status === 'SUCCESS') {
        runsFinished.inc({ status })
        log.info({ durationMs: Math.round(seconds * 1000) }, 'Run succeeded')
      }
    }
  }
}

export type RunTrace = ReturnType<typeof traceRun>
