import { sql, type SQL } from 'drizzle-orm'
import { storableJson } from './storable.ts'

/** A value as a jsonb parameter; characters jsonb cannot hold become U+FFFD rather than failing the statement. */
export const jsonb = (value: unknown): SQL => sql`${storableJson(value)}::jsonb`

/** A text[] parameter: one bound value per element. */
export const textArray = (values: readonly string[]): SQL => sql`array[${sql.join(values.map((value) => sql`${value}`), sql`, `)}]::text[]`

/** `runs.duration_ms`: milliseconds from `since` to now, the one formula every run statement uses. */
export const durationMsSince = (since: SQL): SQL => sql`(extract(epoch from (now() - ${since})) * 1000)::int`
