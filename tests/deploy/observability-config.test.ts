/**
 * infra/grafana and infra/prometheus: the files parse, and every expression names only series
 * the running api and worker export (a renamed metric would leave a dashboard blank and an
 * alert silent without this); the dashboard reads only the namespaces and jobs its variables
 * pick, the alerts fire per namespace and when the targets disappear, and the PrometheusRule
 * of infra/k8s holds the same rules.
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

interface Variable { name: string, type: string, query?: { query: string }, includeAll?: boolean, allValue?: string }

const dashboard = JSON.parse(read('infra/grafana/switchboard.json')) as { uid: string, title: string, panels: Panel[], templating: { list: Variable[] } }
const rules = parse(read('infra/prometheus/alerts.yaml')) as { groups: Array<{ name: string, rules: Rule[] }> }
const prometheusRule = parse(read('infra/k8s/components/prometheus-rules/prometheus-rule.yaml')) as { kind: string, spec: typeof rules }

/** Prometheus's own series of every target (1 while its last scrape succeeded). */
const PROMETHEUS_SERIES = new Set(['up'])
/** The jobs components/prometheus-monitors creates, which the target alerts name. */
const JOBS = ['switchboard-api', 'switchboard-worker']

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
// The worker HPA's queue metrics (infra/k8s/components/worker-hpa) come through these adapter rules.
const adapterRules = (parse(read('infra/k8s/components/worker-hpa/prometheus-adapter.values.yaml')) as { rules: { external: Array<{ seriesQuery: string, name: { as: string } }> } }).rules.external
const adapterExprs = adapterRules.map((rule) => ({ where: `prometheus-adapter rule ${rule.name.as}`, expr: rule.seriesQuery }))

t.test('the dashboard and the rules are well formed', async (t) => {
  t.equal(dashboard.uid, 'switchboard-overview')
  t.ok(dashboardExprs.length >= 20, 'a panel for each series family')
  for (const panel of panels(dashboard.panels).filter((p) => p.type !== 'row')) t.ok((panel.targets ?? []).length > 0, `panel "${panel.title}" has a query`)
  const alerts = rules.groups.flatMap((group) => group.rules)
  t.same(alerts.map((rule) => rule.alert).sort(), [
    'SwitchboardApiErrors',
    'SwitchboardApiSlow',
    'SwitchboardApiTargetsMissing',
    'SwitchboardChatPlatformErrors',
    'SwitchboardDatabaseDown',
    'SwitchboardDatabasePoolFull',
    'SwitchboardJobsFailing',
    'SwitchboardQueueBacklogGrowing',
    'SwitchboardReconcilerTakingOverRuns',
    'SwitchboardRedisDown',
    'SwitchboardRunFailureRateHigh',
    'SwitchboardRunsStuck',
    'SwitchboardTargetDown',
    'SwitchboardWorkerTargetsMissing'
  ])
  for (const rule of alerts) {
    t.ok(['warning', 'critical'].includes(rule.labels?.severity ?? ''), `${rule.alert} has a severity`)
    t.type(rule.annotations?.summary, 'string', `${rule.alert} has a summary`)
    if (rule.for !== undefined) t.match(rule.for, /^[0-9]+[smh]$/)
    t.equal(rule.expr.split('(').length, rule.expr.split(')').length, `${rule.alert}: parentheses balance`)
  }
})

t.test('the dashboard reads only the namespaces and jobs its variables pick', async (t) => {
  const variables = Object.fromEntries(dashboard.templating.list.map((variable) => [variable.name, variable]))
  for (const name of ['namespace', 'job']) {
    const variable = variables[name]
    t.equal(variable?.type, 'query', `a ${name} variable`)
    // Only Switchboard's processes export this series: other applications never show up in the list.
    t.match(variable?.query?.query, new RegExp(`^label_values\\(switchboard_database_up(\\{[^}]*\\})?, ${name}\\)$`), `${name}: the values of Switchboard's targets`)
    t.match(variable, { includeAll: true, allValue: '.*' })
  }
  for (const { where, expr } of dashboardExprs) {
    for (const series of seriesOf(expr)) {
      const selectors = [...expr.matchAll(new RegExp(`\\b${series}(\\{[^}]*\\})?`, 'g'))].map((match) => match[1] ?? '')
      for (const selector of selectors) {
        t.match(selector, /namespace=~"\$namespace"/, `${where}: ${series} is read in the picked namespaces`)
        t.match(selector, /job=~"\$job"/, `${where}: ${series} is read from the picked jobs`)
      }
    }
  }
})

t.test('the alerts fire per namespace, and when the targets are gone', async (t) => {
  const alerts = rules.groups.flatMap((group) => group.rules)
  for (const rule of alerts) {
    const aggregations = [...rule.expr.matchAll(/\b(sum|max|min|avg|count)\s*(?:by\s*\(([^)]*)\))?\s*\(/g)]
    for (const [aggregation, operator, by] of aggregations) {
      t.match(by ?? '', /\bnamespace\b/, `${rule.alert}: ${operator} keeps the namespace (${aggregation.trim()})`)
    }
    if (seriesOf(rule.expr).some((series) => PROMETHEUS_SERIES.has(series))) {
      t.match(rule.expr, new RegExp(`up\\{job(=|=~)"(${JOBS.join('|')}|${JOBS.join('\\|')})"\\}`), `${rule.alert}: up of Switchboard's jobs only`)
    }
  }
  for (const job of JOBS) {
    t.ok(alerts.some((rule) => rule.expr.trim() === `absent(up{job="${job}"} == 1)\nor (group by (namespace) (max_over_time(up{job="${job}"}[1d])) unless group by (namespace) (up{job="${job}"} == 1))` && rule.labels?.severity === 'critical'), `a critical alert when no ${job} target is up, in any namespace that had one`)
  }
})

t.test('the PrometheusRule of the Kubernetes kit holds the same rules', async (t) => {
  t.equal(prometheusRule.kind, 'PrometheusRule')
  t.same(prometheusRule.spec.groups, rules.groups)
})

t.test('every expression reads series the api and the worker export', async (t) => {
  const workerPort = await freePort()
  const stack = await startStack(t, { env: { WORKER_HTTP_PORT: String(workerPort) } })
  const exported = new Set<string>()
  for (const url of [`${stack.metricsUrl}/metrics`, `http://127.0.0.1:${workerPort}/metrics`]) {
    const text = await (await fetch(url)).text()
    for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      exported.add(name!)
      if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) exported.add(`${name}${suffix}`)
      if (type === 'summary') for (const suffix of ['_sum', '_count']) exported.add(`${name}${suffix}`)
    }
  }
  for (const { where, expr } of [...dashboardExprs, ...alertExprs, ...adapterExprs]) {
    const series = seriesOf(expr)
    t.ok(series.length > 0, `${where} reads a series`)
    for (const name of series) t.ok(exported.has(name) || PROMETHEUS_SERIES.has(name), `${where}: ${name} is exported`)
  }
})
