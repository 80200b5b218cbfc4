import { useMemo, useRef } from 'preact/hooks'
import { isFinished } from '@switchboard/core/db/values'
import { api } from '../../api.ts'
import { inChildRunsOf, type InChildRuns } from '../../graph.ts'
import { useData } from '../../hooks.ts'
import type { Run } from '../../types.ts'

/** The child runs read: the api's first page, newest first; a parallel has at most 10 branches. */
const CHILDREN_LISTED = 50
/** The child runs of the same workflow read with their logs, each a request while unfinished. */
const CHILDREN_READ = 20
/** How often the children of an unfinished run are read again: the run waits while its branches move. */
const CHILDREN_EVERY_MS = 1000
const NO_RUNS: Run[] = []

/**
 * How the nodes of the run shown took part in its child runs of the same workflow (a parallel's
 * branches; a workflow calling itself), for the canvas and the node panel: without them, the nodes
 * of a branch would show as not reached. A finished child is read once.
 */
export function useInChildRuns (run: Run | undefined): ReadonlyMap<string, InChildRuns> {
  const finished = useRef(new Map<string, Run>())
  const loaded = useData(async () => {
    if (run === undefined || run.childCount === 0) return { parentId: run?.id, children: NO_RUNS }
    const listed = await api.runs({ parentRunId: run.id, limit: CHILDREN_LISTED })
    const ours = listed.filter((child) => child.workflowId === run.workflowId).slice(0, CHILDREN_READ)
    const children = await Promise.all(ours.map(async (child) => {
      const known = finished.current.get(child.id)
      if (known !== undefined) return known
      const read = await api.run(child.id)
      if (isFinished(read.status)) finished.current.set(read.id, read)
      return read
    }))
    return { parentId: run.id, children }
  }, [run?.id, run?.status, run?.childCount], run === undefined || isFinished(run.status) ? null : CHILDREN_EVERY_MS)
  // What was read for another run (the one shown before) is not this run's.
  const children = loaded.data !== undefined && loaded.data.parentId === run?.id ? loaded.data.children : NO_RUNS
  return useMemo(() => inChildRunsOf(children), [children])
}
