import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { builtSinceChanged } from '@switchboard/testing/entries'

/**
 * `pnpm tap:compiled [tap's arguments | reliability]`: tap over the test files as plain JavaScript,
 * for `pnpm test` and the reliability tier (docs/testing.md, "Test files without loader hooks"). Without files, every
 * file runs, the ones that run alone (tap's `serial`) after the others, so that tap's pool of files
 * running at once drains once instead of before each of them.
 *
 * `node_modules/.cache/tap-build` mirrors the checkout:
 * - each test file (`tests/`, `apps/*\/test`, `packages/*\/test`), and the console's sources, which
 *   have no build of their own to import, transpiled to `.js` beside a link to its source;
 * - the `src` of each workspace with a build, a tree of links to its sources and to its build's
 *   JavaScript (`src/x.js` → `dist/x.js`), so that `../src/x.js` and the package's exports load
 *   one and the same module, from the build;
 * - everything else linked as it is, so paths a test finds from `import.meta.url` (docs, infra,
 *   migrations, the builds) lead where they lead in the checkout;
 * - the checkout's `package.json`, its tap settings for the `.js` names, without tsx.
 * tap runs in there, and no test process loads a module through a loader hook.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const OUT = join(ROOT, 'node_modules/.cache/tap-build')
/** The workspaces whose `src` runs from their `dist` (each has `tsconfig.build.json`). */
const BUILT = ['packages/core', 'packages/testing', 'apps/api', 'apps/worker']
const TRANSPILE: ts.CompilerOptions = {
  module: ts.ModuleKind.ESNext,
  target: ts.ScriptTarget.ES2023,
  verbatimModuleSyntax: true,
  rewriteRelativeImportExtensions: true,
  jsx: ts.JsxEmit.ReactJSX
}

const stale = BUILT.filter((dir) => !builtSinceChanged(join(ROOT, dir)))
if (stale.length > 0) {
  console.error(`the build of ${stale.join(', ')} is older than its sources: run \`pnpm build\` first (the compiled tests import the builds)`)
  process.exit(1)
}

/** Folders the tests write in (README, Scripts: the browser tests' screenshots): linked as a whole, so that what is written lands in the checkout. */
const WRITTEN = [join(ROOT, 'tests/browser/screenshots')]

/** `real`'s tree at `at`: each file linked (a `node_modules` folder and WRITTEN as a whole), and `beside` called with each file and its link. */
function mirrorTree (real: string, at: string, beside: (file: string, link: string) => void): void {
  mkdirSync(at, { recursive: true })
  for (const entry of readdirSync(real, { withFileTypes: true })) {
    const from = join(real, entry.name)
    const to = join(at, entry.name)
    if (entry.isDirectory() && entry.name !== 'node_modules' && !WRITTEN.includes(from)) {
      mirrorTree(from, to, beside)
      continue
    }
    symlinkSync(from, to)
    beside(from, to)
  }
}

/** Beside a TypeScript file's link: its JavaScript, transpiled. */
function transpiled (file: string, link: string): void {
  if (!/(?<!\.d)\.tsx?$/.test(file)) return
  const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), { fileName: file, compilerOptions: TRANSPILE })
  writeFileSync(link.replace(/\.tsx?$/, '.js'), outputText)
}

/** Beside the link of a TypeScript file of `src`: a link to its JavaScript in `dist`, where the build wrote it. */
const fromBuild = (src: string, dist: string) => (file: string, link: string): void => {
  const built = join(dist, relative(src, file)).replace(/\.ts$/, '.js')
  if (file.endsWith('.ts') && existsSync(built)) symlinkSync(built, link.replace(/\.ts$/, '.js'))
}

rmSync(OUT, { recursive: true, force: true })
mkdirSync(OUT, { recursive: true })
for (const folder of WRITTEN) mkdirSync(folder, { recursive: true })
for (const name of readdirSync(ROOT)) {
  if (!['apps', 'packages', 'tests', 'package.json', '.git'].includes(name)) symlinkSync(join(ROOT, name), join(OUT, name))
}
for (const group of ['apps', 'packages']) {
  for (const workspace of readdirSync(join(ROOT, group))) {
    const dir = join(group, workspace)
    mkdirSync(join(OUT, dir), { recursive: true })
    for (const name of readdirSync(join(ROOT, dir))) {
      const [from, to] = [join(ROOT, dir, name), join(OUT, dir, name)]
      if (name === 'src' && BUILT.includes(dir)) mirrorTree(from, to, fromBuild(from, join(ROOT, dir, 'dist')))
      else if (name === 'test' || name === 'src') mirrorTree(from, to, transpiled)
      else symlinkSync(from, to)
    }
  }
}
mirrorTree(join(ROOT, 'tests'), join(OUT, 'tests'), transpiled)

const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { tap: Record<string, unknown> & { include: string[], exclude: string[], serial: string[] } }
const javascript = (paths: string[]): string[] => paths.map((path) => path.replace(/\.ts$/, '.js'))
const { 'node-arg': _tsx, ...settings } = manifest.tap
const [include, exclude, serial] = [javascript(settings.include), javascript(settings.exclude), javascript(settings.serial)]
/**
 * A test process allocates much and lives seconds: a young generation of 32 MiB instead of V8's
 * 16 collects it less often (about 5 % less CPU over ten api and end-to-end files, docs/testing.md).
 */
const nodeArgs = ['--max-semi-space-size=32']
writeFileSync(join(OUT, 'package.json'), JSON.stringify({ ...manifest, tap: { ...settings, include, exclude, serial, 'node-arg': nodeArgs } }, null, 2))

const TAP = join(ROOT, 'node_modules/.bin/tap')
/** tap in the mirror with `args`: its exit code. */
const tap = (args: string[]): number => spawnSync(TAP, args, { cwd: OUT, stdio: 'inherit' }).status ?? 1

/**
 * Reliability files that mostly wait (a client that takes a minute to send its body): they run
 * beside the tier's others, in a second tap, instead of after them (docs/testing.md, "The reliability
 * tier's two lanes").
 */
const RELIABILITY_WAITING = ['tests/reliability/contacts-import.test.js']

/**
 * `pnpm tap:compiled reliability`: the reliability tier, one file at a time (each breaks stores
 * under load and times the recovery), with RELIABILITY_WAITING beside them; the second tap's
 * output follows the first's, and the exit code is the first failure's.
 */
async function reliabilityTier (): Promise<number> {
  const files = readdirSync(join(OUT, 'tests/reliability')).filter((name) => name.endsWith('.test.js')).sort().map((name) => `tests/reliability/${name}`)
  const log = join(OUT, 'reliability-waiting.log')
  const output = openSync(log, 'w')
  const beside = spawn(TAP, RELIABILITY_WAITING, { cwd: OUT, stdio: ['ignore', output, output], env: { ...process.env, TEST_PORT_SLOT: '3' } })
  const besideExit = once(beside, 'exit') as Promise<[number | null]>
  const main = tap(files.filter((file) => !RELIABILITY_WAITING.includes(file)))
  const [besideCode] = await besideExit
  closeSync(output)
  process.stdout.write(readFileSync(log))
  return main !== 0 ? main : besideCode ?? 1
}

const args = process.argv.slice(2)
if (args.length === 1 && args[0] === 'reliability') process.exit(await reliabilityTier())
if (args.length > 0) process.exit(tap(args))
/** A `serial` entry, a file or a folder, as a glob. */
const glob = (path: string): string => /\.js$|\*/.test(path) ? path : `${path}/**`
/** Whether `path` is one of `exclude`'s files or under one of its folders (the reliability tier is also serial). */
const excluded = (path: string): boolean => exclude.some((pattern) => {
  const folder = pattern.replace(/\/\*\*$/, '')
  return path === folder || path.startsWith(`${folder}/`)
})
const shared = tap([...exclude, ...serial].map((path) => `--exclude=${glob(path)}`))
const alone = tap(serial.filter((path) => !excluded(path)))
process.exit(shared !== 0 ? shared : alone)
