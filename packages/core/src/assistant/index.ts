/** The assistant: the model provider, AGENT workflows as tools, turns per inbound message, staff decisions on drafts. */
export { draftsService, type DraftsService } from './drafts.ts'
export { createModelClient, ModelCallError, nodeModelProvider, type ModelClient } from './model.ts'
export { assistantSettings, DEFAULT_DEBOUNCE_MS, MAX_DEBOUNCE_MS, MAX_INSTRUCTIONS_CHARS, MAX_MODEL_NAME_CHARS, type AssistantSettingsStore } from './settings.ts'
export { assistantRunner, type AssistantRunner } from './turn.ts'
export { checkToolArguments } from '../engine/agents.ts'
export { loadTools, type AssistantTool } from './tools.ts'
export { wakeTurn } from './turn-jobs.ts'
export { assistantTurnsRepository, type AssistantTurnsRepository } from './turns.ts'
