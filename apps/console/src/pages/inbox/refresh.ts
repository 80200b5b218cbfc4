/** How often the inbox reloads what it shows without its event stream. */
export const REFRESH_MS = 5000
/** While the inbox's event stream is open, polling only backs it up. */
export const LIVE_REFRESH_MS = 60_000
