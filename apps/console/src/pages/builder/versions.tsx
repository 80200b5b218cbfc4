import { useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { compareNodes } from '../../builder.ts'
import { ErrorNotice, Loading } from '../../components/ui.tsx'
import { dateTime } from '../../format.ts'
import { useAction, useData } from '../../hooks.ts'
import { loadSession } from '../../session.ts'

interface Comparison {
  older: number
  newer: number
  added: string[]
  removed: string[]
  changed: string[]
}

const listed = (ids: string[]): string => ids.length === 0 ? 'none' : ids.join(', ')

/** The version history: who saved each version and when, two versions compared (nodes added, removed, changed), an older one restored. */
export function Versions ({ workflowId, current, onRestored }: { workflowId: string, current: number, onRestored: () => void }) {
  const versions = useData(async () => api.versions(workflowId), [workflowId, current])
  const [picked, setPicked] = useState<number[]>([])
  const [comparison, setComparison] = useState<Comparison>()
  const session = loadSession()?.user
  // Admins see who saved each version by email; members see their own saves as "you".
  const users = useData(async () => session?.role === 'admin' ? await api.users() : [], [])
  const who = (id: string | null): string => {
    if (id === null) return 'unknown'
    if (id === session?.id) return 'you'
    return users.data?.find((user) => user.id === id)?.email ?? id
  }
  const compare = useAction(async () => {
    const [older, newer] = [...picked].sort((a, b) => a - b) as [number, number]
    const [before, after] = await Promise.all([api.version(workflowId, older), api.version(workflowId, newer)])
    setComparison({ older, newer, ...compareNodes(before.nodes, after.nodes) })
  })
  const restore = useAction(async (version: number) => {
    await api.restoreVersion(workflowId, version)
    setComparison(undefined)
    onRestored()
  })
  const toggle = (version: number, on: boolean): void => {
    setPicked(on ? [...picked.filter((v) => v !== version), version].slice(-2) : picked.filter((v) => v !== version))
  }
  return (
    <section aria-labelledby='versions-title'>
      <h3 id='versions-title'>Versions</h3>
      <ErrorNotice error={versions.error ?? compare.error ?? restore.error} />
      {versions.data === undefined
        ? <Loading what='versions' />
        : (
          <ul class='versions'>
            {versions.data.map((version) => (
              <li key={version.version} data-version={version.version}>
                <label class='check'>
                  <input type='checkbox' checked={picked.includes(version.version)} onChange={(e) => { toggle(version.version, e.currentTarget.checked) }} />
                  v{version.version}{version.version === current && ' (current)'}
                </label>
                <span class='muted small'> {dateTime(version.createdAt)} by {who(version.createdBy)}{version.restoredFrom !== null && `, restored from v${version.restoredFrom}`}</span>
                {version.version !== current && (
                  <button type='button' disabled={restore.busy} onClick={() => { restore.run(version.version) }} aria-label={`Restore version ${version.version}`}>Restore</button>
                )}
              </li>
            ))}
          </ul>
          )}
      <button type='button' disabled={picked.length !== 2 || compare.busy} onClick={() => { compare.run() }}>Compare the two checked</button>
      {comparison !== undefined && (
        <div class='comparison' role='region' aria-label={`Version ${comparison.older} against ${comparison.newer}`}>
          <h4>v{comparison.older} → v{comparison.newer}</h4>
          <dl>
            <dt>Added</dt><dd>{listed(comparison.added)}</dd>
            <dt>Removed</dt><dd>{listed(comparison.removed)}</dd>
            <dt>Changed</dt><dd>{listed(comparison.changed)}</dd>
          </dl>
        </div>
      )}
    </section>
  )
}
