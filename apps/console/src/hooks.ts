import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import type { LinkFieldsByType } from '@switchboard/core/engine/graph'
import { api } from './api.ts'
import { accountChoices, type AccountChoice } from './chat-accounts.ts'
import { BASE } from './paths.ts'
import { chosenAccount } from './session.ts'
import type { ChatAccount, NodeTypeInfo } from './types.ts'

export interface Loaded<T> {
  data: T | undefined
  error: Error | undefined
  /** Loads again now. */
  reload: () => void
}

/**
 * Loads `load()` when a dependency changes and, with `everyMs`, again that long after each
 * answer (never two requests at once). A failed poll keeps the last data and shows the error.
 */
export function useData<T> (load: () => Promise<T>, deps: unknown[], everyMs?: number | null): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined)
  const [error, setError] = useState<Error | undefined>(undefined)
  const [tick, setTick] = useState(0)
  const latest = useRef(load)
  latest.current = load

  useEffect(() => {
    let live = true
    let timer: ReturnType<typeof setTimeout> | undefined
    const run = async (): Promise<void> => {
      try {
        const value = await latest.current()
        if (!live) return
        setData(value)
        setError(undefined)
      } catch (err) {
        if (live) setError(err instanceof Error ? err : new Error(String(err)))
      } finally {
        if (live && everyMs !== undefined && everyMs !== null) timer = setTimeout(run, everyMs)
      }
    }
    run().catch(() => {})
    return () => {
      live = false
      clearTimeout(timer)
    }
  }, [...deps, tick, everyMs])

  const reload = useCallback(() => { setTick((n) => n + 1) }, [])
  return { data, error, reload }
}

/** Starts an action from an event handler, remembering whether it is under way and how it failed (never throwing). */
export function useAction<A extends unknown[]> (action: (...args: A) => Promise<void>): { run: (...args: A) => void, busy: boolean, error: Error | undefined } {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<Error | undefined>(undefined)
  const run = (...args: A): void => {
    setBusy(true)
    setError(undefined)
    action(...args)
      .catch((err: unknown) => { setError(err instanceof Error ? err : new Error(String(err))) })
      .finally(() => { setBusy(false) })
  }
  return { run, busy, error }
}

/**
 * A list page's filters and page in its address (at `path`): setting one drops it when empty, and
 * any filter but the page itself goes back to the first page.
 */
export function useAddressFilters (path: string): (name: string, value: string) => void {
  const { query, route } = useLocation()
  return (name, value) => {
    const next = new URLSearchParams({ ...query, [name]: value })
    if (value === '') next.delete(name)
    if (name !== 'offset') next.delete('offset')
    const text = next.toString()
    route(text === '' ? path : `${path}?${text}`, true)
  }
}

/**
 * The chat account a page reads and acts for: `asked` (its address's) when the user may use it,
 * else the one last chosen in this browser (`chooseAccount`), else the first they may.
 */
export function useChatAccount (asked: string | undefined): { accounts: Loaded<ChatAccount[]>, choices: AccountChoice[], accountId: string | undefined } {
  const accounts = useData(api.accounts, [])
  const choices = accounts.data === undefined ? [] : accountChoices(accounts.data)
  const accountId = choices.find((choice) => choice.id === (asked ?? chosenAccount()))?.id ?? choices[0]?.id
  return { accounts, choices, accountId }
}

/** Whether the page is visible (not a background tab, not minimised): polls that only people read stop while it is not. */
export function usePageVisible (): boolean {
  const [visible, setVisible] = useState(document.visibilityState === 'visible')
  useEffect(() => {
    const changed = (): void => { setVisible(document.visibilityState === 'visible') }
    document.addEventListener('visibilitychange', changed)
    return () => { document.removeEventListener('visibilitychange', changed) }
  }, [])
  return visible
}

let nodeTypesLoad: Promise<NodeTypeInfo[]> | undefined
/** The node types once loaded: a component mounted after has them at its first render (a graph is drawn at once). */
let nodeTypesLoaded: NodeTypeInfo[] | undefined

/** The node types (GET /api/automation/node-types), loaded once per page load: they change only with the service. */
export function useNodeTypes (): Loaded<NodeTypeInfo[]> {
  const loaded = useData(async () => {
    nodeTypesLoad ??= api.nodeTypes().then((nodeTypes) => {
      nodeTypesLoaded = nodeTypes
      return nodeTypes
    }, (err: unknown) => {
      nodeTypesLoad = undefined
      throw err
    })
    return await nodeTypesLoad
  }, [])
  return loaded.data === undefined && nodeTypesLoaded !== undefined ? { ...loaded, data: nodeTypesLoaded } : loaded
}

/** The link fields of each node type, for graph.ts: none until the node types have loaded. */
export function linkFieldsOf (nodeTypes: NodeTypeInfo[] | undefined): LinkFieldsByType {
  return Object.fromEntries((nodeTypes ?? []).map((nodeType) => [nodeType.type, nodeType.traits.links]))
}

/** A same-tab link to another page of the console, which preact-iso's router would follow: what `useLeaveGuard` asks about. */
function consoleLinkOf (event: MouseEvent): HTMLAnchorElement | undefined {
  if (event.defaultPrevented || event.button !== 0 || event.ctrlKey || event.metaKey || event.altKey || event.shiftKey) return undefined
  const link = event.composedPath().find((target): target is HTMLAnchorElement => target instanceof HTMLAnchorElement && target.href !== '')
  if (link === undefined || link.origin !== location.origin || !/^(_?self)?$/i.test(link.target) || link.download !== '') return undefined
  return link.getAttribute('href')?.startsWith(BASE) === true ? link : undefined
}

/** The page that asks before it is left (`useLeaveGuard`), while it is shown. */
interface LeaveGuard {
  /** The page's path: moving within it (another query) is not leaving. */
  page: string
  unsaved: () => boolean
  /** Asks whether to leave the unsaved work. */
  leaves: () => boolean
  /** Goes back to the page after Back or Forward moved the address away. */
  returnToPage: () => void
}
let leaveGuard: LeaveGuard | undefined

const staysOn = (guard: LeaveGuard): boolean => guard.unsaved() && !guard.leaves()

/**
 * The listeners of `useLeaveGuard`, added once before the app renders: preact-iso routes on the window's
 * `click` and `popstate`, and Chromium calls a window's `popstate` listeners in the order they were added
 * (a capture listener added later ran after the router's, the page it guards already unmounted).
 */
export function listenForLeaving (): void {
  addEventListener('click', (event) => {
    const link = consoleLinkOf(event)
    if (leaveGuard === undefined || link === undefined || link.pathname === leaveGuard.page || !staysOn(leaveGuard)) return
    event.preventDefault()
    event.stopPropagation()
  }, true)
  addEventListener('popstate', (event) => {
    if (leaveGuard === undefined || location.pathname === leaveGuard.page || !staysOn(leaveGuard)) return
    event.stopImmediatePropagation()
    leaveGuard.returnToPage()
  }, true)
  addEventListener('beforeunload', (event) => {
    if (leaveGuard?.unsaved() === true) event.preventDefault()
  })
}

/**
 * While `unsaved`, asks `question` before the page is left: a link to another page of the console, Back or
 * Forward, and closing or reloading the tab (the browser's own question). Moving within the page (another
 * query, as the builder's `?run=`) is not leaving. Needs `listenForLeaving` (main.tsx).
 */
export function useLeaveGuard (unsaved: boolean, question: string): void {
  const { route } = useLocation()
  // The address shown, read at each render: when popstate comes, the address has already changed.
  const latest = useRef({ unsaved, question, route, address: location.pathname + location.search })
  latest.current = { unsaved, question, route, address: location.pathname + location.search }
  useEffect(() => {
    const guard: LeaveGuard = {
      page: location.pathname,
      unsaved: () => latest.current.unsaved,
      leaves: () => confirm(latest.current.question),
      // A new entry on top: the one the user went to stays in the history.
      returnToPage: () => { latest.current.route(latest.current.address) }
    }
    leaveGuard = guard
    return () => { if (leaveGuard === guard) leaveGuard = undefined }
  }, [])
}
