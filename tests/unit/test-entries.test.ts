import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t, { type Test } from 'tap'
import { entryArgs } from '@switchboard/testing/entries'

/** The test kit starts an app from its build only when the build is newer than its sources and packages/core's (docs/testing.md). */

const SOURCES = ['--conditions=@switchboard/source', '--import=tsx', 'apps/api/src/server.ts']
const BUILT = ['apps/api/dist/server.js']

/** A checkout of the files entryArgs reads, each written at `at` seconds (since the epoch), its folders at 100. */
function checkout (t: Test, at: Record<string, number>): string {
  const root = mkdtempSync(join(tmpdir(), 'switchboard-entries-'))
  t.teardown(() => { rmSync(root, { recursive: true, force: true }) })
  for (const file of Object.keys(at)) {
    mkdirSync(dirname(join(root, file)), { recursive: true })
    writeFileSync(join(root, file), '')
  }
  for (const [file, seconds] of Object.entries(at)) {
    utimesSync(join(root, file), seconds, seconds)
    for (let folder = dirname(file); folder !== '.'; folder = dirname(folder)) utimesSync(join(root, folder), 100, 100)
  }
  return root
}

const TREE = {
  'apps/api/package.json': 100,
  'apps/api/src/server.ts': 100,
  'apps/api/dist/server.js': 200,
  'packages/core/package.json': 100,
  'packages/core/src/db/index.ts': 100,
  'packages/core/dist/db/index.js': 200
}

t.test('a build newer than every source is started as it is', async (t) => {
  t.same(entryArgs('apps/api/src/server.ts', checkout(t, TREE)), BUILT)
})

t.test('a source changed after the build, of the app or of packages/core, is started through tsx', async (t) => {
  t.same(entryArgs('apps/api/src/server.ts', checkout(t, { ...TREE, 'apps/api/src/server.ts': 300 })), SOURCES, 'the app\'s source')
  t.same(entryArgs('apps/api/src/server.ts', checkout(t, { ...TREE, 'packages/core/src/db/index.ts': 300 })), SOURCES, 'packages/core\'s source')
  t.same(entryArgs('apps/api/src/server.ts', checkout(t, { ...TREE, 'packages/core/package.json': 300 })), SOURCES, 'a package.json')
  t.same(entryArgs('apps/api/src/server.ts', checkout(t, { ...TREE, 'apps/api/dist/server.js': 50 })), SOURCES, 'one built file older than the sources')
})

t.test('a file removed after the build (its folder changed) is started through tsx', async (t) => {
  const root = checkout(t, TREE)
  utimesSync(join(root, 'apps/api/src'), 300, 300)
  t.same(entryArgs('apps/api/src/server.ts', root), SOURCES)
})

t.test('without a build, or for an entry outside apps/, the sources', async (t) => {
  const { 'apps/api/dist/server.js': _built, ...unbuilt } = TREE
  t.same(entryArgs('apps/api/src/server.ts', checkout(t, unbuilt)), SOURCES)
  t.same(entryArgs('packages/core/src/bin/migrate.ts', checkout(t, TREE)), ['--conditions=@switchboard/source', '--import=tsx', 'packages/core/src/bin/migrate.ts'])
})
