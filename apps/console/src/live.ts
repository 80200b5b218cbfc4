import { useEffect, useState } from 'preact/hooks'
import { api } from './api.ts'

/** Events that arrive together (a burst of statuses, a broadcast) are one reload. */
const COALESCE_MS = 300
/** The wait before reconnecting: doubling from the first up to the last, never less (a stream the api ends at once is not a busy loop). */
const RECONNECT_MS = { first: 1000, last: 30_000 }

export interface InboxLive {
  /** The stream is open: polling only backs it up. */
  connected: boolean
  /** Rises after changes of the account's inbox (coalesced), and after a reconnection: what reads the inbox reloads on it. */
  version: number
}

/**
 * The account's inbox, live (README, The team inbox): the api's event stream, reconnected whenever
 * it ends or breaks. Events carry ids only; whatever changed, the inbox reloads what it shows.
 */
export function useInboxEvents (accountId: string | undefined): InboxLive {
  const [connected, setConnected] = useState(false)
  const [version, setVersion] = useState(0)
  useEffect(() => {
    if (accountId === undefined) return
    const controller = new AbortController()
    let reconnect: ReturnType<typeof setTimeout> | undefined
    let coalesce: ReturnType<typeof setTimeout> | undefined
    const changed = (): void => {
      coalesce ??= setTimeout(() => {
        coalesce = undefined
        setVersion((n) => n + 1)
      }, COALESCE_MS)
    }
    const connect = async (failures: number): Promise<void> => {
      let failed = false
      try {
        await api.chatEvents(accountId, controller.signal, () => { setConnected(true) }, changed)
      } catch {
        failed = true
      }
      setConnected(false)
      if (controller.signal.aborted) return
      // What changed while no stream was open is read again.
      changed()
      const next = failed ? failures + 1 : 0
      reconnect = setTimeout(() => { connect(next).catch(() => {}) }, Math.min(RECONNECT_MS.last, RECONNECT_MS.first * 2 ** next))
    }
    connect(0).catch(() => {})
    return () => {
      controller.abort()
      clearTimeout(reconnect)
      clearTimeout(coalesce)
      setConnected(false)
    }
  }, [accountId])
  return { connected, version }
}
