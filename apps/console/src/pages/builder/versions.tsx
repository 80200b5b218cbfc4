import { useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { ErrorNotice, Loading } from '../../components/ui.tsx'
import { dateTime } from '../../format.ts'
import { linkFieldsOf, useAction, useData, useNodeTypes } from '../../hooks.ts'
import { loadSession } from '../../session.ts'
import { describeChange, diffVersions, isEmptyDiff, type VersionDiff } from '../../version-diff.ts'

interface Comparison {
  older: number
  newer: number
  diff: VersionDiff
}

const CHANGE_WORDS = { added: 'Added', removed: 'Removed', changed: 'Changed' } as const

/** Two versions compared field by field: the trigger, each node added, removed or changed (and how), the builder edges. */
function ComparisonView ({ comparison: { older, newer, diff } }: { comparison: Comparison }) {
  return (
    <div class='comparison' role='region' aria-label={`Version ${older} against ${newer}`}>
      <h4>v{older} → v{newer}</h4>
      {isEmptyDiff(diff)
        ? <p class='muted'>The same nodes, links and trigger: only positions differ.</p>
        : (
          <ul class='diff'>
            {diff.trigger.length > 0 && (
              <li class='diff-changed' data-diff='trigger'>Trigger changed
                <ul>{diff.trigger.map((change) => <li key={change.field}>{describeChange(change)}</li>)}</ul>
              </li>
            )}
            {diff.nodes.map((node) => (
              <li key={node.id} class={`diff-${node.change}`} data-diff={node.id}>
                {CHANGE_WORDS[node.change]} <code>{node.id}</code> <span class='muted'>({node.type})</span>
                {node.fields.length > 0 && <ul>{node.fields.map((change) => <li key={change.field}>{describeChange(change)}</li>)}</ul>}
              </li>
            ))}
            {diff.edgesAdded.map((edge) => <li key={`+${edge}`} class='diff-added'>Edge added: {edge}</li>)}
            {diff.edgesRemoved.map((edge) => <li key={`-${edge}`} class='diff-removed'>Edge removed: {edge}</li>)}
          </ul>
          )}
    </div>
  )
}

/** The version history: who saved each version and when, two versions compared field by field, an older one restored. */
export function Versions ({ workflowId, current, onRestored }: { workflowId: string, current: number, onRestored: () => void }) {
  const versions = useData(async () => api.versions(workflowId), [workflowId, current])
  // Loaded once per page load, as the builder's own: which config fields are links.
  const nodeTypes = useNodeTypes()
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
    setComparison({ older, newer, diff: diffVersions(before, after, linkFieldsOf(nodeTypes.data)) })
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
      {comparison !== undefined && <ComparisonView comparison={comparison} />}
    </section>
  )
}
