import { load, type LoadResult } from '../lib/load.ts'
import { failureNote, metric, type Metric, type ScenarioResult } from '../lib/report.ts'
import { startStack, type BenchContext, type Stack } from '../lib/stack.ts'
import { seconds } from '../lib/workflows.ts'

interface Seed { workflows: number, runs: number, conversations: number }
const FULL: Seed = { workflows: 10_000, runs: 1_000_000, conversations: 100_000 }
const QUICK: Seed = { workflows: 1000, runs: 50_000, conversations: 5000 }
/** Runs read one by one, each with the log lines a three-node run writes. */
const SAMPLED_RUNS = 1000
const MESSAGES_PER_CONVERSATION = 2
const PHONE_NUMBER_ID = '100000000000001'
const CONNECTIONS = 4

/** Seeded ids: cuid-shaped (lower-case letter, then letters and digits) so that the api's id check lets them through. */
const idOf = (prefix: string, n: number): string => `${prefix}${String(n).padStart(9, '0')}`
const pad = (expression: string): string => `lpad((${expression})::text, 9, '0')`

/**
 * One user's data at scale, generated inside Postgres (INSERT … SELECT over generate_series), with
 * foreign-key triggers off for the session (the rows are consistent by construction) and committed
 * without waiting for the WAL flush; then VACUUM ANALYZE, as autovacuum would leave the tables.
 */
async function seed (stack: Stack, userId: string, size: Seed): Promise<void> {
  await stack.sql.begin(async (sql) => {
    await sql`set local session_replication_role = replica`
    await sql`set local synchronous_commit = off`
    await sql.unsafe(`
      insert into workflows (id, user_id, name, trigger_type, is_active, nodes, run_count, success_count, failure_count, last_run_at, created_at, updated_at)
      select 'bwf' || ${pad('i')}, $1, 'workflow ' || i, 'WEBHOOK', true,
        '[{"id":"n1","type":"set","config":{"values":{"a":"{{triggerData.body.a}}"}},"next":"n2"},{"id":"n2","type":"set","config":{"values":{"b":"2"}}}]'::jsonb,
        $2::int / $3::int, $2::int / $3::int, 0, now() - make_interval(mins => i), now() - interval '30 days', now() - make_interval(mins => i)
      from generate_series(1, $3::int) as i`, [userId, size.runs, size.workflows])
    // Newest first every 0.4 s back in time: a million runs span under five days, inside RUN_RETENTION_DAYS.
    await sql.unsafe(`
      insert into runs (id, workflow_id, user_id, status, queue, workflow_version, trigger_data, result, error, current_node_id, created_at, started_at, completed_at, duration_ms)
      select 'brun' || ${pad('i')}, 'bwf' || ${pad('i % $3::int + 1')}, $1, case when i % 50 = 0 then 'FAILED' else 'SUCCESS' end, 'workflow-runs', 1,
        jsonb_build_object('body', jsonb_build_object('a', i, 'event', 'order.created'), 'headers', jsonb_build_object('content-type', 'application/json'), 'query', '{}'::jsonb),
        jsonb_build_object('triggerData', jsonb_build_object('body', jsonb_build_object('a', i)), 'n1', jsonb_build_object('a', i::text), 'n2', jsonb_build_object('b', '2')),
        case when i % 50 = 0 then 'Node n2 failed' end, null, at, at + interval '2 ms', at + interval '9 ms', 7
      from (select i, now() - make_interval(secs => i * 0.4) as at from generate_series(1, $2::int) as i) as s`, [userId, size.runs, size.workflows])
    await sql.unsafe(`
      insert into run_logs (run_id, node_id, level, message, created_at)
      select 'brun' || ${pad('r')}, node, 'INFO', message, now()
      from generate_series(1, $1::int) as r,
        (values (null, 'Run started'), ('n1', 'Node n1 (set) started'), ('n1', 'Node n1 completed in 1ms'),
                ('n2', 'Node n2 (set) started'), ('n2', 'Node n2 completed in 1ms'), (null, 'Run succeeded')) as line(node, message)`, [SAMPLED_RUNS])
    await sql.unsafe(`
      insert into conversations (id, phone_number_id, phone, name, last_message, last_message_at, unread_count, last_incoming_at, created_at, updated_at)
      select 'bconv' || ${pad('i')}, $1, '1555' || lpad(i::text, 8, '0'), 'Customer ' || i, 'Message ' || i,
        now() - make_interval(secs => i * 5), i % 4, now() - make_interval(secs => i * 5), now() - interval '30 days', now() - make_interval(secs => i * 5)
      from generate_series(1, $2::int) as i`, [PHONE_NUMBER_ID, size.conversations])
    await sql.unsafe(`
      insert into messages (id, conversation_id, direction, type, content, status, created_at)
      select 'bmsg' || ${pad('i * 10 + m')}, 'bconv' || ${pad('i')}, case when m % 2 = 0 then 'outbound' else 'inbound' end, 'text', 'Message ' || i || '.' || m,
        case when m % 2 = 0 then 'delivered' end, now() - make_interval(secs => i * 5 + ($2::int - m))
      from generate_series(1, $1::int) as i, generate_series(1, $2::int) as m`, [size.conversations, MESSAGES_PER_CONVERSATION])
  })
  await stack.sql.unsafe('vacuum analyze workflows, runs, run_logs, conversations, messages')
}

const pick = (count: number): number => 1 + Math.floor(Math.random() * count)

/**
 * List and single reads against seeded data, 4 connections each: the dashboard's pages,
 * with ids drawn at random from the seeded ones.
 */
export async function readsAtScale (ctx: BenchContext): Promise<Omit<ScenarioResult, 'seconds'>> {
  const size = ctx.quick ? QUICK : FULL
  // The installation's chat account (from the environment) holds the conversations: a user without accounts of their own reads them.
  const stack = await startStack(ctx, 'F', { worker: false, env: { CHAT_PHONE_NUMBER_ID: PHONE_NUMBER_ID, CHAT_ACCESS_TOKEN: 'bench-access-token' } })
  const user = await stack.client.newUser(await stack.adminToken())
  const seedStarted = performance.now()
  await seed(stack, user.id, size)
  const seedSeconds = (performance.now() - seedStarted) / 1000

  const reads: Array<{ name: string, single: boolean, path: () => string }> = [
    { name: 'workflow list', single: false, path: () => '/api/automation/workflows' },
    { name: 'one workflow (latest 10 runs)', single: true, path: () => `/api/automation/workflows/${idOf('bwf', pick(size.workflows))}` },
    { name: 'one run', single: true, path: () => `/api/automation/runs/${idOf('brun', pick(SAMPLED_RUNS))}` },
    { name: 'run list', single: false, path: () => '/api/automation/runs' },
    { name: 'conversations list', single: false, path: () => '/api/chat/conversations' }
  ]
  const metrics: Metric[] = []
  const notes: string[] = []
  for (const read of reads) {
    const drive = async (durationSeconds: number): Promise<LoadResult> => load({
      baseUrl: stack.baseUrl,
      method: 'GET',
      headers: { authorization: `Bearer ${user.token}` },
      connections: CONNECTIONS,
      durationSeconds,
      request: () => ({ path: read.path() })
    })
    await drive(1)
    const result = await drive(seconds(ctx.quick, 5, 2))
    metrics.push(
      metric(`${read.name} p50`, result.p50Ms, 'ms'),
      metric(`${read.name} p99`, result.p99Ms, 'ms', { op: '<', value: read.single ? 20 : 50 })
    )
    notes.push(...failureNote(read.name, result))
  }
  return {
    id: 'F',
    title: 'reads at scale',
    metrics,
    notes: [
      `seeded ${size.workflows.toLocaleString('en-US')} workflows, ${size.runs.toLocaleString('en-US')} runs, ${size.conversations.toLocaleString('en-US')} conversations (${MESSAGES_PER_CONVERSATION} messages each) for one member in ${seedSeconds.toFixed(0)}s; lists at their default page (100); ${CONNECTIONS} connections, api only`,
      ...notes
    ]
  }
}
