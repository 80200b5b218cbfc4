import type { Database } from '@switchboard/core/db'

export const BARE_QUEUE = 'bare-runs'

/** The bare pipeline's one table: a row per run, like `runs` reduced to what the pipeline touches. */
export async function createBareTable (sql: Database['sql']): Promise<void> {
  await sql`create table bare_runs (
    id bigint generated always as identity primary key,
    payload jsonb not null,
    status text not null default 'PENDING',
    created_at timestamptz not null default now(),
    completed_at timestamptz
  )`
}
