import { shortened, type AgentStep, type AgentView } from '../agent-steps.ts'
import { paths } from '../paths.ts'

function ModelStep ({ step, answer }: { step: Extract<AgentStep, { type: 'model' }>, answer: boolean }) {
  return (
    <li class='agent-step agent-step-model' data-agent-step='model'>
      <div>
        <strong>{answer ? 'Answer' : 'Model'}</strong>
        <span class='muted small'> · {step.model} · {step.tokensIn} tokens in, {step.tokensOut} out</span>
      </div>
      {step.text !== null && step.text !== '' && <p class='agent-text'>{step.text}</p>}
      {step.toolCalls.length > 0 && (
        <ul class='tool-calls' aria-label='Tool calls'>
          {step.toolCalls.map((call) => (
            <li key={call.id} data-tool-call={call.name}>calls <code>{call.name}</code> with <code class='agent-data'>{shortened(call.arguments)}</code></li>
          ))}
        </ul>
      )}
    </li>
  )
}

function ToolStep ({ step }: { step: Extract<AgentStep, { type: 'tool' }> }) {
  return (
    <li class={`agent-step agent-step-${step.status}`} data-agent-step='tool' data-tool-step={step.name}>
      <div>
        <strong>Tool</strong> <code>{step.name}</code> <span class='agent-tool-status'>{step.status}</span>
        {step.runId !== null && <> · <a href={paths.run(step.runId)} class='tool-run'>its run</a></>}
      </div>
      <code class='agent-data'>{shortened(step.result)}</code>
    </li>
  )
}

/** An ai_agent node's steps in order, the tool runs it waits for first; each tool run linked. */
export function AgentSteps ({ view }: { view: AgentView }) {
  const last = view.steps.length - 1
  const waits = view.waitingFor.map((wait, n) => (
    <span key={wait.runId}>{n > 0 && ', '}<code>{wait.name}</code> (<a href={paths.run(wait.runId)} class='tool-run'>its run</a>)</span>
  ))
  return (
    <>
      {waits.length > 0 && <p class='agent-waiting'>Waiting for {waits}</p>}
      {view.steps.length === 0
        ? <p class='muted'>No step yet: the model is being asked.</p>
        : (
          <ol class='agent-steps' aria-label='Agent steps'>
            {view.steps.map((step, n) => step.type === 'model'
              ? <ModelStep key={n} step={step} answer={view.answered && n === last} />
              : <ToolStep key={n} step={step} />)}
          </ol>
          )}
    </>
  )
}
