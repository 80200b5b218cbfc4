/** The run service: what the api does to runs (start, cancel, replay, decide an approval, wake), over runs/, engine/ and triggers/. */
export { runService, type RunService } from './service.ts'
