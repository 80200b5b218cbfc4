/** Whether `value` is a JSON object (not an array, not null): what the console reads keys of. */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
