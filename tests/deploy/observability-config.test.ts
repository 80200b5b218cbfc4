/**
 * infra/grafana and infra/prometheus: the files parse, and every expression names only series
 * the running api and worker export (a renamed metric would leave a dashboard blank and an
 * alert silent without this).
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { parse } from 'yaml'
import { freePort, startStack } from '@switchboard/testing/processes'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const read = (path: string): string => readFileSync(`${ROOT}${path}`, 'utf8')

interface Panel { type: string, title: string, targets?: Array<{ expr: string }>, panels?: Panel[] }
interface Rule { alert: string, expr: string, for?: string, labels?: Record<string, string>, annotations?: Record<string, string> }

const dashboard = JSON.parse(read('infra/grafana/switchboard.json')) as { uid: string, title: string, panels: Panel[] }
const rules = parse(read('infra/prometheus/alerts.yaml')) as { groups: Array<{ name: string, rules: Rule[] }> }

const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan'])

/**
 * The series an expression reads: identifiers that are neither functions (followed by `(`), nor
 * keywords, nor inside label matchers, grouping clauses, strings or ranges.
 */
function seriesOf (expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
  const names: string[] = []
  for (const match of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const name = match[0]
    const next = stripped.slice(match.index + name.length).trimStart()
    if (next.startsWith('(') || PROMQL_WORDS.has(name.toLowerCase())) continue
    // A number's exponent (1e-9) is no series.
    if (/^e[0-9]*$/i.test(name) && /[0-9.]$/.test(stripped.slice(0, match.index))) continue
    names.push(name)
  }
  return names
}

t.test('the expression reader finds series and nothing else', async (t) => {
  t.same(seriesOf('histogram_quantile(0.95, sum by (le, queue) (rate(a_bucket{state="x",b=~"y|z"}[5m])))'), ['a_bucket'])
  t.same(seriesOf('sum(rate(a_total[5m])) / clamp_min(sum(rate(b_total[5m])), 1e-9) > 0.2 and c > 0'), ['a_total', 'b_total', 'c'])
  t.same(seriesOf('max by (queue) (deriv(q{state="waiting"}[10m])) > 0'), ['q'])
})

const panels = (list: Panel[]): Panel[] => list.flatMap((panel) => [panel, ...panels(panel.panels ?? [])])
const dashboardExprs = panels(dashboard.panels).flatMap((panel) => (panel.targets ?? []).map((target) => ({ where: `panel "${panel.title}"`, expr: target.expr })))
const alertExprs = rules.groups.flatMap((group) => group.rules.map((rule) => ({ where: `alert ${rule.alert}`, expr: rule.expr })))

t.test('the dashboard and the rules are well formed', async (t) => {
  t.equal(dashboard.uid, 'switchboard-overview')
  t.ok(dashboardExprs.length >= 20, 'a panel for each series family')
  for (const panel of panels(dashboard.panels).filter((p) => p.type !== 'row')) t.ok((panel.targets ?? []).length > 0, `panel "${panel.title}" has a query`)
  const alerts = rules.groups.flatMap((group) => group.rules)
  t.same(alerts.map((rule) => rule.alert).sort(), [
    'SwitchboardChatPlatformErrors',
    'SwitchboardDatabaseDown',
    'SwitchboardQueueBacklogGrowing',
    'SwitchboardReconcilerTakingOverRuns',
    'SwitchboardRedisDown',
    'SwitchboardRunFailureRateHigh',
    'SwitchboardRunsStuck'
  ])
  for (const rule of alerts) {
    t.ok(['warning', 'critical'].includes(rule.labels?.severity ?? ''), `${rule.alert} has a severity`)
    t.type(rule.annotations?.summary, 'string', `${rule.alert} has a summary`)
    if (rule.for !== undefined) t.match(rule.for, /^[0-9]+[smh]$/)
    t.equal(rule.expr.split('(').length, rule.expr.split(')').length, `${rule.alert}: parentheses balance`)
  }
})

t.test('every expression reads series the api and the worker export', async (t) => {
  const workerPort = await freePort()
  const stack = await startStack(t, { env: { WORKER_HTTP_PORT: String(workerPort) } })
  const exported = new Set<string>()
  for (const url of [`${stack.baseUrl}/metrics`, `http://127.0.0.1:${workerPort}/metrics`]) {
    const text = await (await fetch(url)).text()
    for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      exported.add(name!)
      if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) exported.add(`${name}${suffix}`)
      if (type === 'summary') for (const suffix of ['_sum', '_count']) exported.add(`${name}${suffix}`)
    }
  }
  for (const { where, expr } of [...dashboardExprs, ...alertExprs]) {
    const series = seriesOf(expr)
    t.ok(series.length > 0, `${where} reads a series`)
    for (const name of series) t.ok(exported.has(name), `${where}: ${name} is exported`)
  }
})
