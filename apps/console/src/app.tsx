import type { ComponentChildren } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { lazy, LocationProvider, Route, Router, useLocation } from 'preact-iso'
import { onUnauthorized } from './api.ts'
import { BASE, paths } from './paths.ts'
import { clearSession, loadSession, type Session } from './session.ts'
import { Account } from './pages/account.tsx'
import { Admin } from './pages/admin.tsx'
import { AuditLog } from './pages/audit-log.tsx'
import { BroadcastPage, Broadcasts, NewBroadcast } from './pages/broadcasts.tsx'
import { ChatSettings } from './pages/chat-settings.tsx'
import { Contacts } from './pages/contacts.tsx'
import { Credentials } from './pages/credentials.tsx'
import { Inbox } from './pages/inbox/index.tsx'
import { Knowledge } from './pages/knowledge.tsx'
import { Login } from './pages/login.tsx'
import { NotFound } from './pages/not-found.tsx'
import { Overview } from './pages/overview.tsx'
import { RunPage } from './pages/run.tsx'
import { Runs } from './pages/runs.tsx'
import { Templates } from './pages/templates.tsx'
import { WorkflowEditor } from './pages/workflow-editor.tsx'
import { WorkflowPage } from './pages/workflow.tsx'
import { Workflows } from './pages/workflows.tsx'

/** The builder, with its graph editor, loads only when opened. */
const Builder = lazy(async () => (await import('./pages/builder/index.tsx')).Builder)

const SECTIONS = [
  { href: `${BASE}/`, label: 'Overview', matches: (path: string) => path === BASE },
  { href: `${BASE}/workflows`, label: 'Workflows', matches: (path: string) => path.startsWith(`${BASE}/workflows`) },
  { href: `${BASE}/runs`, label: 'Runs', matches: (path: string) => path.startsWith(`${BASE}/runs`) },
  { href: `${BASE}/inbox`, label: 'Inbox', matches: (path: string) => path.startsWith(`${BASE}/inbox`) },
  { href: `${BASE}/contacts`, label: 'Contacts', matches: (path: string) => path.startsWith(`${BASE}/contacts`) },
  { href: `${BASE}/broadcasts`, label: 'Broadcasts', matches: (path: string) => path.startsWith(`${BASE}/broadcasts`) },
  { href: `${BASE}/templates`, label: 'Templates', matches: (path: string) => path.startsWith(`${BASE}/templates`) },
  { href: `${BASE}/credentials`, label: 'Credentials', matches: (path: string) => path.startsWith(`${BASE}/credentials`) },
  { href: `${BASE}/admin`, label: 'Admin', matches: (path: string) => path.startsWith(`${BASE}/admin`) }
]

function Layout ({ session, onLogout, children }: { session: Session, onLogout: () => void, children: ComponentChildren }) {
  const { path } = useLocation()
  return (
    <>
      <a class='skip-link' href='#main'>Skip to content</a>
      <header class='topbar'>
        <a class='brand' href={`${BASE}/`}>Switchboard</a>
        <nav aria-label='Sections'>
          <ul>
            {SECTIONS.map((section) => (
              <li key={section.href}>
                <a href={section.href} aria-current={section.matches(path) ? 'page' : undefined}>{section.label}</a>
              </li>
            ))}
          </ul>
        </nav>
        <div class='who'>
          <span class='muted'>{session.user.email} ({session.user.role})</span>
          <a href={paths.account} aria-current={path === paths.account ? 'page' : undefined}>Account</a>
          <button type='button' class='link-button' onClick={onLogout}>Log out</button>
        </div>
      </header>
      <main id='main' tabIndex={-1}>{children}</main>
    </>
  )
}

function Shell () {
  const location = useLocation()
  const [session, setSession] = useState<Session | null>(loadSession)
  const onLoginPage = location.path === `${BASE}/login`

  // Reads the address when called, not when rendered: several requests may be refused at once.
  const signOut = (): void => {
    clearSession()
    setSession(null)
    if (window.location.pathname === `${BASE}/login`) return
    location.route(`${BASE}/login?next=${encodeURIComponent(window.location.pathname + window.location.search)}`, true)
  }

  useEffect(() => { onUnauthorized(signOut) }, [])

  // The token ends 24 hours after login: back to the login page then, without waiting for a 401.
  useEffect(() => {
    if (session === null) return
    const timer = setTimeout(signOut, Math.max(0, session.expiresAt - Date.now()))
    return () => { clearTimeout(timer) }
  }, [session])

  useEffect(() => {
    if (session === null && !onLoginPage) signOut()
  }, [session, onLoginPage])

  if (session === null || onLoginPage) {
    return (
      <Login onLogin={(started) => {
        setSession(started)
        const next = location.query.next
        location.route(next?.startsWith(`${BASE}/`) === true && !next.startsWith(`${BASE}/login`) ? next : `${BASE}/`, true)
      }}
      />
    )
  }

  return (
    <Layout session={session} onLogout={signOut}>
      <Router>
        <Route path={`${BASE}/`} component={Overview} />
        <Route path={`${BASE}/workflows`} component={Workflows} />
        <Route path={`${BASE}/workflows/new`} component={WorkflowEditor} />
        <Route path={`${BASE}/workflows/:id/edit`} component={WorkflowEditor} />
        <Route path={`${BASE}/workflows/:id/builder`} component={Builder} />
        <Route path={`${BASE}/workflows/:id`} component={WorkflowPage} />
        <Route path={`${BASE}/runs`} component={Runs} />
        <Route path={`${BASE}/runs/:id`} component={RunPage} />
        <Route path={`${BASE}/inbox`} component={Inbox} />
        <Route path={`${BASE}/contacts`} component={Contacts} />
        <Route path={`${BASE}/chat-settings`} component={ChatSettings} />
        <Route path={paths.knowledge} component={Knowledge} />
        <Route path={`${BASE}/broadcasts`} component={Broadcasts} />
        <Route path={`${BASE}/broadcasts/new`} component={NewBroadcast} />
        <Route path={`${BASE}/broadcasts/:id`} component={BroadcastPage} />
        <Route path={`${BASE}/templates`} component={Templates} />
        <Route path={`${BASE}/credentials`} component={Credentials} />
        <Route path={`${BASE}/admin`} component={Admin} />
        <Route path={`${BASE}/admin/audit`} component={AuditLog} />
        <Route path={paths.account} component={Account} session={session} onSessionChange={setSession} />
        <Route default component={NotFound} />
      </Router>
    </Layout>
  )
}

export function App () {
  return (
    <LocationProvider scope={BASE}>
      <Shell />
    </LocationProvider>
  )
}
