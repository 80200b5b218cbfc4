// Exits 0 when tap's Test class is built with the plugins package.json configures, else 1.
// On its first run after an install tap rebuilds that class itself, but spawns that run's test
// files with the plugins it was installed with, @tapjs/typescript's loader among them: seconds of
// CPU a file (docs/testing.md). The README's `test` runs `tap build` first when this says so.
import { realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

const fromTap = createRequire(realpathSync(new URL('../../node_modules/tap/package.json', import.meta.url)))
const fromRun = createRequire(fromTap.resolve('@tapjs/run/package.json'))
const { TapConfig } = await import(pathToFileURL(fromRun.resolve('@tapjs/config')).href)
const { signature } = await import(pathToFileURL(fromTap.resolve('@tapjs/test')).href)

const config = await TapConfig.load()
process.exitCode = config.pluginSignature === signature ? 0 : 1
