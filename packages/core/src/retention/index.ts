/** Retention: what the workers delete, and when. */
export { createRetention } from './retention.ts'
