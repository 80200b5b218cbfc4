/** Runs: starting them (one, a group, paced), admission, reading and cancelling them; the engine (engine/) executes them. */
export { runsRepository } from './repository.ts'
export { createGroupStarter, GROUP_START_DEFAULTS, type GroupStarter, type RequestStart } from './group-start.ts'
export { startRun, startRuns } from './start.ts'
export { createRunAdmission, type RunAdmission } from './admission.ts'
export { parseRunTags, RUN_SEARCH_BOUNDS, RUN_TAG_BOUNDS } from './search.ts'
export { createRunIndexing, indexNewRuns } from './search-index.ts'
export { FLOW_CONTROL_BOUNDS } from './flow-control.ts'
export { CANCEL_ON_MAX_RULES } from './cancel-on.ts'
