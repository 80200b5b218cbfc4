import { render } from 'preact'
import { App } from './app.tsx'
import { listenForLeaving } from './hooks.ts'
import './styles.css'

// Before the app renders: the router's listeners come after these (hooks.ts, useLeaveGuard).
listenForLeaving()
render(<App />, document.getElementById('app') as HTMLElement)
