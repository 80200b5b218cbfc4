import { fileURLToPath } from 'node:url'

/** The built console (`vite build`): what the api serves at /console. */
export const consoleRoot = fileURLToPath(new URL('./dist/', import.meta.url))
