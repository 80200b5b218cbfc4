import { Type } from 'typebox'
import { NodeError } from '../types.ts'
import { optionalBoolean, optionalNumber, optionalObject, requiredString } from './config.ts'
import { defineNode, templated } from './definition.ts'
import { callMcpTool, MCP_DEFAULT_TIMEOUT_MS, mcpServerOf } from './mcp-client.ts'

/** The longest `timeoutMs` (README, Retries and time-outs). */
const MAX_TIMEOUT_MS = 300_000
/** What the run's error quotes of a failing tool's text at most. */
const MAX_TOOL_ERROR_CHARS = 2000

const CREDENTIAL_REQUIRED = 'credential is required: the name of an mcp credential'

/**
 * One call of a tool of a remote MCP server (README, MCP client), the server named by an mcp
 * credential of the owner. The call goes through the SSRF guard of http_request, within the
 * attempt's `timeoutMs`, its answers within NODE_OUTPUT_MAX_BYTES. A tool's own error
 * (`isError`) fails the node with its text, as a refusal that may not pass, unless
 * `failOnToolError` is false; network errors, time-outs, 5xx and 429 answers may pass (`retry`).
 * Each attempt is logged before it is made.
 */
export const mcpCall = defineNode({
  type: 'mcp_call',
  category: 'HTTP',
  description: 'Calls a tool of a remote MCP server (an mcp credential): the tool’s content and text become the node’s output.',
  config: {
    // Optional to the schema, which a save checks without `credential` (checked with the other references): required by `validate`.
    credential: Type.Optional(Type.String({ minLength: 1, description: 'Required: the name of an mcp credential, the server’s url and the headers sent to it.' })),
    tool: templated(Type.String({ minLength: 1, maxLength: 128, description: 'The tool’s name, as the server lists it.' })),
    arguments: Type.Optional(templated(Type.Record(Type.String(), Type.Unknown(), {
      default: {},
      description: 'The tool’s arguments, as its input schema says (templates allowed in values; one template alone may give the whole object).'
    }))),
    failOnToolError: Type.Optional(templated(Type.Boolean({
      default: true,
      description: 'Whether a tool’s own error (isError) fails the node with its text; false: it is the output, with isError true.'
    })))
  },
  example: { credential: 'orders_mcp', tool: 'lookup_order', arguments: { orderId: '{{triggerData.orderId}}' } },
  traits: {
    pure: false,
    recordsBeforeEffect: true,
    templateFields: ['tool', 'arguments', 'failOnToolError'],
    links: [],
    credentials: { fields: ['credential'], types: ['mcp'] },
    secretFields: [],
    retries: { allowed: true, defaultTimeoutMs: MCP_DEFAULT_TIMEOUT_MS }
  },
  validate (config) {
    if (typeof config.credential !== 'string' || config.credential === '') throw new NodeError(CREDENTIAL_REQUIRED)
  },
  async execute ({ config, credential, deps, control, signal, beforeEffect, log, attempt }) {
    if (credential === undefined) throw new NodeError(CREDENTIAL_REQUIRED)
    const server = mcpServerOf(credential)
    const tool = requiredString(config, 'tool')
    const args = optionalObject(config, 'arguments') ?? {}
    const failOnToolError = optionalBoolean(config, 'failOnToolError') ?? true
    // The engine holds the attempt to the same limit; the client's own ends the exchange with its session.
    const timeoutMs = optionalNumber(config, 'timeoutMs', 1, MAX_TIMEOUT_MS) ?? MCP_DEFAULT_TIMEOUT_MS
    const target = `MCP tool ${tool} of ${credential.name}`

    await beforeEffect(`Calling ${target} (attempt ${attempt})`)
    const result = await callMcpTool(server, tool, args, { dispatcher: deps.http, signal, timeoutMs, maxResponseBytes: control.limits.nodeOutputMaxBytes })
    log(result.isError ? 'WARN' : 'INFO', `${target} answered${result.isError ? ' with an error' : ''}`)
    if (result.isError && failOnToolError) {
      const text = result.text === '' ? 'it gave no text' : result.text
      throw new NodeError(`MCP tool ${tool} failed: ${text.length > MAX_TOOL_ERROR_CHARS ? `${text.slice(0, MAX_TOOL_ERROR_CHARS)}…` : text}`)
    }
    return {
      output: {
        tool,
        content: result.content,
        ...(result.structuredContent !== undefined && { structuredContent: result.structuredContent }),
        text: result.text,
        isError: result.isError
      }
    }
  }
})
