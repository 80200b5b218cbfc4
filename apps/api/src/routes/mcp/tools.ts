import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { checkToolArguments, loadTools, type AssistantTool } from '@switchboard/core/assistant'
import { DomainError, isStoreUnavailable } from '@switchboard/core/errors'
import { Deadline, TimeoutError } from '@switchboard/core/timeout'
import { mayUseWorkflow, viewerOf } from '@switchboard/core/users'
import type { createStartQuota } from '../api/automation/start-quota.ts'

/**
 * The longest a `tools/call` waits for its run (README, MCP server); past it the answer names the
 * run, still running, for the client to read through the API. Under the server's 60 s idle
 * socket time-out (build.ts `connectionTimeout`) and the 60 s of common proxies, which a quiet
 * answer would otherwise meet first (docs/decisions.md).
 */
const MCP_CALL_WAIT_MS = 50_000
/**
 * How often a waiting call tells a client that asked for progress (`_meta.progressToken`) that its
 * run goes on; the first notice goes as soon as the run is started, so the client learns its id.
 */
const PROGRESS_EVERY_MS = 3000
/** The run's status is read again after this, doubling up to POLL_MAX_MS: a quick run answers quickly, a slow one costs one read a second. */
const POLL_FIRST_MS = 50
const POLL_MAX_MS = 1000
/** The most of a run's output one answer carries, as JSON text (the request body's own bound). */
const MAX_OUTPUT_CHARS = 1024 * 1024

interface ToolServerOptions {
  request: FastifyRequest
  reply: FastifyReply
  checkStartQuota: ReturnType<typeof createStartQuota>
  /** Aborted when the client goes: the wait ends, the run goes on. */
  signal: AbortSignal
}

const toolError = (text: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text }] })

/**
 * One request's MCP server: `tools/list` and `tools/call` over the caller's AGENT workflows, the
 * assistant's tools (core assistant/tools.ts: same names, same schema checks), within an API key's
 * `workflowIds`. A call is a run started as `/fire` starts one (the owner's start quota, the
 * `agent-execution` queue), with triggerData `{arguments}`, waited for at most MCP_CALL_WAIT_MS.
 */
export function createToolServer (fastify: FastifyInstance, { request, reply, checkStartQuota, signal }: ToolServerOptions): McpServer {
  const viewer = viewerOf(request.user)
  const server = new McpServer({ name: 'switchboard', version: '0.1.0' }, { capabilities: { tools: {} } })

  const toolsOfCaller = async (): Promise<AssistantTool[]> => {
    const tools = await Deadline.after(fastify.config.timeouts.requestDeadlineMs).race(loadTools(fastify.db, [viewer.id]), 'read the tools')
    return tools.filter((tool) => mayUseWorkflow(viewer, tool.workflowId))
  }

  server.server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: (await toolsOfCaller()).map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema as { type: 'object' } }))
  }))

  server.server.setRequestHandler(CallToolRequestSchema, async (call, extra) => {
    const tool = (await toolsOfCaller()).find((candidate) => candidate.name === call.params.name)
    // The protocol's answer for a tool that does not exist: an error of the request, not of the tool.
    if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${call.params.name.slice(0, 100)}`)
    const checked = checkToolArguments(tool, JSON.stringify(call.params.arguments ?? {}))
    if ('error' in checked) return toolError(checked.error)

    let runId: string
    try {
      const deadline = Deadline.after(fastify.config.timeouts.requestDeadlineMs)
      const workflow = await deadline.race(fastify.triggers.findTarget(tool.workflowId, viewer), 'find the workflow')
      if (workflow === null || !workflow.isActive) return toolError('The tool\'s workflow is no longer active')
      await checkStartQuota(request, reply, workflow, deadline)
      runId = (await fastify.runs.start({ workflow, triggerData: { arguments: checked.args }, requestId: request.id }, deadline)).runId
    } catch (err) {
      if (err instanceof DomainError && err.code !== 'SERVICE_UNAVAILABLE') return toolError(err.message)
      if (err instanceof DomainError || err instanceof TimeoutError || isStoreUnavailable(err)) return toolError('The run could not be started in time; retry later')
      request.log.error({ err, workflowId: tool.workflowId }, 'an MCP tool call could not start its run')
      throw new McpError(ErrorCode.InternalError, 'Internal error')
    }
    request.log.info({ workflowId: tool.workflowId, runId }, 'MCP tool call started a run')

    const progressToken = extra._meta?.progressToken
    const waiting = AbortSignal.any([signal, extra.signal])
    const started = Date.now()
    let nextProgress = started
    for (let pause = POLL_FIRST_MS; ; pause = Math.min(pause * 2, POLL_MAX_MS)) {
      const outcome = (await fastify.runs.outcomes([runId])).get(runId)
      if (outcome?.status === 'SUCCESS') {
        const output = outcome.output ?? '{}'
        return output.length > MAX_OUTPUT_CHARS
          ? toolError(`Run ${runId} succeeded, but its output is longer than ${MAX_OUTPUT_CHARS} characters: read it with GET /api/automation/runs/${runId}`)
          : { content: [{ type: 'text', text: output }] }
      }
      if (outcome?.status === 'FAILED') return toolError(outcome.error ?? `Run ${runId} failed`)
      if (outcome?.status === 'CANCELLED') return toolError(`Run ${runId} was cancelled`)
      const now = Date.now()
      if (now - started >= MCP_CALL_WAIT_MS) {
        return {
          content: [{
            type: 'text',
            text: JSON.stringify({ runId, status: outcome?.status ?? 'PENDING', note: `The run is still going after ${MCP_CALL_WAIT_MS / 1000} s; read it with GET /api/automation/runs/${runId}` })
          }]
        }
      }
      if (progressToken !== undefined && now >= nextProgress) {
        nextProgress = now + PROGRESS_EVERY_MS
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken, progress: now - started, total: MCP_CALL_WAIT_MS, message: `run ${runId} is ${outcome?.status ?? 'PENDING'}` }
        })
      }
      // Throws once the client is gone or cancelled the call: nobody is left to answer.
      await sleep(Math.min(pause, MCP_CALL_WAIT_MS - (now - started)), undefined, { signal: waiting })
    }
  })
  return server
}
