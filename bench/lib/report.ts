/** A figure a scenario measured, with the target for it when it has one. */
export interface Metric {
  name: string
  value: number
  unit: string
  /** e.g. `>= 1500`: the figure passes when it compares so with the number. */
  target?: { op: '>=' | '<', value: number }
  pass?: boolean
}

export interface ScenarioResult {
  id: string
  title: string
  metrics: Metric[]
  /** How it was measured and anything that makes a figure doubtful (errors, unfinished runs). */
  notes: string[]
  seconds: number
  error?: string
}

export function metric (name: string, value: number, unit: string, target?: Metric['target']): Metric {
  if (target === undefined) return { name, value, unit }
  const pass = Number.isFinite(value) && (target.op === '>=' ? value >= target.value : value < target.value)
  return { name, value, unit, target, pass }
}

/** A load's failures, as a note when there were any: a figure measured with refused requests is suspect. */
export function failureNote (what: string, load: { non2xx: number, errors: number, timeouts: number }): string[] {
  if (load.non2xx + load.errors + load.timeouts === 0) return []
  return [`${what}: ${load.non2xx} non-2xx answers, ${load.errors} errors, ${load.timeouts} timeouts`]
}

function formatValue (value: number): string {
  if (!Number.isFinite(value)) return 'n/a'
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US')
  if (Math.abs(value) >= 10) return value.toFixed(1)
  return value.toFixed(2)
}

const row = (cells: string[]): string => `| ${cells.join(' | ')} |`

/** The results as Markdown: the machine first, then one row per figure, its target and whether it is met. */
export function renderTable (machine: Record<string, string>, scenarios: ScenarioResult[]): string {
  const lines = ['| Machine | |', '|---|---|', ...Object.entries(machine).map(([key, value]) => row([key, value])), '']
  lines.push(row(['Scenario', 'Figure', 'Value', 'Target', 'Result']), row(['---', '---', '---:', '---', '---']))
  for (const scenario of scenarios) {
    const label = `${scenario.id}. ${scenario.title}`
    if (scenario.error !== undefined) lines.push(row([label, 'error', '', '', `**ERROR** ${scenario.error.split('\n')[0]!.replaceAll('|', '\\|')}`]))
    for (const [index, m] of scenario.metrics.entries()) {
      const target = m.target === undefined ? '' : `${m.target.op === '>=' ? '≥' : '<'} ${formatValue(m.target.value)} ${m.unit}`
      const result = m.pass === undefined ? '' : m.pass ? 'pass' : '**FAIL**'
      lines.push(row([index === 0 && scenario.error === undefined ? label : '', m.name, `${formatValue(m.value)} ${m.unit}`, target, result]))
    }
  }
  const notes = scenarios.flatMap((scenario) => scenario.notes.map((note) => `- ${scenario.id}: ${note}`))
  if (notes.length > 0) lines.push('', ...notes)
  return lines.join('\n')
}
