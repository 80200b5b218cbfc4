import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/** The latest change under `dir`: its files' and folders' times (a folder's changes when a file in it is added or removed). */
function latestChange (dir: string): number {
  let latest = statSync(dir).mtimeMs
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs)
  }
  return latest
}

/** The earliest time a file under `dir` was written, or undefined when there is none. */
function earliestWrite (dir: string): number | undefined {
  let earliest: number | undefined
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue
    const written = statSync(join(entry.parentPath, entry.name)).mtimeMs
    earliest = earliest === undefined ? written : Math.min(earliest, written)
  }
  return earliest
}

/** Whether `dir/dist` was built after every change to `dir/src` and to `dir/package.json`. */
export function builtSinceChanged (dir: string): boolean {
  try {
    const built = earliestWrite(join(dir, 'dist'))
    return built !== undefined && built > Math.max(latestChange(join(dir, 'src')), statSync(join(dir, 'package.json')).mtimeMs)
  } catch {
    return false
  }
}

/** Whether each app's build is current, by its folder: asked once per test process. */
const current = new Map<string, boolean>()

/**
 * The node arguments that start an app's entry (`apps/api/src/server.ts`): its build
 * (`apps/api/dist/server.js`) when it and packages/core's build are newer than every change to
 * their sources, since a built process starts on a third of the CPU; else the sources through
 * tsx, so that a test never runs code older than the checkout (docs/testing.md). `root`: the
 * checkout's by default (tests/unit/test-entries.test.ts gives trees of its own).
 */
export function entryArgs (entry: string, root = ROOT): string[] {
  const app = /^(apps\/[^/]+)\/src\//.exec(entry)?.[1]
  if (app === undefined) return sourceEntryArgs(entry)
  const dir = join(root, app)
  if (!current.has(dir)) current.set(dir, builtSinceChanged(dir) && builtSinceChanged(join(root, 'packages/core')))
  return current.get(dir)! ? [builtEntry(entry)] : sourceEntryArgs(entry)
}

/** The node arguments that run a TypeScript entry of the repository from its sources, through tsx. */
export const sourceEntryArgs = (entry: string): string[] => ['--conditions=@switchboard/source', '--import=tsx', entry]

/** An app's entry in its build: `apps/api/src/server.ts` → `apps/api/dist/server.js`. */
export const builtEntry = (entry: string): string => entry.replace('/src/', '/dist/').replace(/\.ts$/, '.js')
