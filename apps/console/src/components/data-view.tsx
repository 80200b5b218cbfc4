import { useState } from 'preact/hooks'
import { isRecord } from '../records.ts'

/** Rows and columns a table shows at most; the JSON view shows everything. */
const MAX_ROWS = 100
const MAX_COLUMNS = 20

const json = (value: unknown): string => JSON.stringify(value, null, 2) ?? 'undefined'
const cell = (value: unknown): string => value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value)
/** The placeholder of `key` under `path` (the top when empty), as templates read it (`{{n1.body.total}}`, `{{n1.items[0]}}`). */
const under = (path: string, key: string | number): string => typeof key === 'number' ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`

interface DataViewProps {
  /** Names the view for assistive technology and tests: `Output of n1`. */
  label: string
  value: unknown
  /** Where `value` is in the run, as a template reads it (`triggerData`, a node's id; empty for the whole input): its fields drag as placeholders. */
  path: string
}

/**
 * A node's input or output as JSON or as a table (README, The workflow builder). The table shows
 * a list of objects as rows (their keys as columns) and an object as its keys and values; each
 * key drags into a config field as its placeholder (`{{path}}`), as the data picker's entries do.
 */
export function DataView ({ label, value, path }: DataViewProps) {
  const tabular = Array.isArray(value) ? value.length > 0 && value.every(isRecord) : isRecord(value)
  const [mode, setMode] = useState<'table' | 'json'>('json')
  const draggable = (placeholder: string, text: string) => (
    <span class='data-key' draggable title={`Drag {{${placeholder}}} into a field`} onDragStart={(event) => { event.dataTransfer?.setData('text/plain', `{{${placeholder}}}`) }}>{text}</span>
  )
  return (
    <div class='data-view'>
      {tabular && (
        <div class='row small' role='group' aria-label={`View of ${label}`}>
          <button type='button' aria-pressed={mode === 'table'} onClick={() => { setMode('table') }}>Table</button>
          <button type='button' aria-pressed={mode === 'json'} onClick={() => { setMode('json') }}>JSON</button>
        </div>
      )}
      {mode === 'json' || !tabular
        ? <pre class='mono' aria-label={label}>{json(value)}</pre>
        : Array.isArray(value)
          ? (() => {
              const rows = (value as Array<Record<string, unknown>>).slice(0, MAX_ROWS)
              const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))].slice(0, MAX_COLUMNS)
              return (
                <table class='data-table' aria-label={label}>
                  <thead><tr><th scope='col'>#</th>{columns.map((column) => <th key={column} scope='col'>{draggable(under(under(path, 0), column), column)}</th>)}</tr></thead>
                  <tbody>{rows.map((row, index) => <tr key={index}><td>{index}</td>{columns.map((column) => <td key={column}>{cell(row[column])}</td>)}</tr>)}</tbody>
                  {value.length > rows.length && <caption class='small muted'>The first {MAX_ROWS} of {value.length} rows</caption>}
                </table>
              )
            })()
          : (
            <table class='data-table' aria-label={label}>
              <tbody>{Object.entries(value as Record<string, unknown>).slice(0, MAX_ROWS).map(([key, field]) => <tr key={key}><th scope='row'>{draggable(under(path, key), key)}</th><td>{cell(field)}</td></tr>)}</tbody>
            </table>
            )}
    </div>
  )
}
