/// <reference lib="dom" />
// The callback given to page.evaluate runs in the browser: DOM types for it.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Page } from 'playwright-core'
import { TEST_ADMIN } from '@switchboard/testing/config'

/**
 * What the console's browser tests share: Debian's Chromium driven by playwright-core, the built
 * console, a page that records what it must never do (reach outside the api's origin, break the
 * Content-Security-Policy, throw), and signing in.
 */

const CHROMIUM = '/usr/bin/chromium'
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CONSOLE_DIST = join(ROOT, 'apps/console/dist')

if (!existsSync(CHROMIUM)) {
  // One line, no stack: `pnpm test` run as root installs it first (tests/get-debian-packages.sh).
  process.stderr.write(`${CHROMIUM} is missing: install Debian's chromium (as root: apt-get install -y chromium; pnpm test run as root installs it itself)\n`)
  process.exit(1)
}
// `pnpm test` builds the console before the browser tests; a test file run alone on a fresh clone builds it here.
if (!existsSync(join(CONSOLE_DIST, 'index.html'))) {
  execFileSync(process.execPath, [join(ROOT, 'apps/console/node_modules/vite/bin/vite.js'), 'build'], { cwd: join(ROOT, 'apps/console'), stdio: 'ignore' })
}

interface Teardown { teardown: (fn: () => unknown) => void }

export interface ConsolePage {
  page: Page
  /** Requests that left the api's origin (data: URLs, and blob: ones when allowed, do not count). */
  outside: string[]
  cspViolations: string[]
  pageErrors: string[]
  /** Photographs the page into the test's screenshots folder. */
  shot: (name: string) => Promise<void>
}

/**
 * A fresh Chromium profile and its page on `baseUrl`, closed at teardown. `screenshots`: the folder
 * under tests/browser/screenshots/ emptied for this test's photographs.
 */
export async function openConsole (t: Teardown, baseUrl: string, options: { screenshots: string, acceptDownloads?: boolean, allowBlobs?: boolean, timeoutMs?: number }): Promise<ConsolePage> {
  const screenshots = fileURLToPath(new URL(`./screenshots/${options.screenshots}/`, import.meta.url))
  await rm(screenshots, { recursive: true, force: true })
  await mkdir(screenshots, { recursive: true })
  const profile = await mkdtemp(join(tmpdir(), 'switchboard-chromium-'))
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1366, height: 900 },
    ...(options.acceptDownloads === true && { acceptDownloads: true }),
    timeout: 30_000
  })
  t.teardown(async () => {
    await browser.close()
    await rm(profile, { recursive: true, force: true })
  })
  const page = browser.pages()[0] ?? await browser.newPage()
  page.setDefaultTimeout(options.timeoutMs ?? 15_000)

  const inside = options.allowBlobs === true ? /^(data|blob):/ : /^data:/
  const watched: ConsolePage = {
    page,
    outside: [],
    cspViolations: [],
    pageErrors: [],
    shot: async (name) => { await page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true }) }
  }
  page.on('request', (request) => { if (!request.url().startsWith(`${baseUrl}/`) && !inside.test(request.url())) watched.outside.push(request.url()) })
  page.on('console', (message) => { if (/Content Security Policy/i.test(message.text())) watched.cspViolations.push(message.text()) })
  page.on('pageerror', (error) => { watched.pageErrors.push(error.message) })
  return watched
}

/** The form controls on the page without a name a screen reader reads (a label or an aria-label): none, on every page. */
export const unlabelledControls = async (page: Page): Promise<string[]> => page.evaluate(() =>
  Array.from(document.querySelectorAll('input, select, textarea'))
    .filter((control) => (control as HTMLInputElement).labels?.length === 0 && !control.hasAttribute('aria-label'))
    .map((control) => control.outerHTML.slice(0, 120)))

/** Signs in from the login page and waits for the overview. */
export async function signIn (page: Page, baseUrl: string, credentials: { email: string, password: string } = TEST_ADMIN): Promise<void> {
  await page.goto(`${baseUrl}/console/login`)
  await page.getByLabel('Email').fill(credentials.email)
  await page.getByLabel('Password').fill(credentials.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
}
