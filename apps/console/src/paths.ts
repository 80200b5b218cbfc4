/** The console's addresses (the api serves it at /console; vite.config.ts `base`). */
export const BASE = '/console'

export const paths = {
  overview: `${BASE}/`,
  workflows: `${BASE}/workflows`,
  newWorkflow: `${BASE}/workflows/new`,
  workflow: (id: string) => `${BASE}/workflows/${encodeURIComponent(id)}`,
  editWorkflow: (id: string) => `${BASE}/workflows/${encodeURIComponent(id)}/edit`,
  builder: (id: string) => `${BASE}/workflows/${encodeURIComponent(id)}/builder`,
  runs: `${BASE}/runs`,
  run: (id: string) => `${BASE}/runs/${encodeURIComponent(id)}`,
  inbox: `${BASE}/inbox`,
  contacts: `${BASE}/contacts`,
  chatSettings: `${BASE}/chat-settings`,
  knowledge: `${BASE}/chat-settings/knowledge`,
  broadcasts: `${BASE}/broadcasts`,
  templates: `${BASE}/templates`,
  newBroadcast: `${BASE}/broadcasts/new`,
  broadcast: (id: string) => `${BASE}/broadcasts/${encodeURIComponent(id)}`,
  admin: `${BASE}/admin`,
  auditLog: `${BASE}/admin/audit`,
  credentials: `${BASE}/credentials`,
  account: `${BASE}/account`
}

/** The public address of a WEBHOOK workflow's inbound webhook (README, Triggers), on the api that serves the console. */
export const webhookUrl = (workflowId: string): string => `${location.origin}/api/automation/webhook/${encodeURIComponent(workflowId)}`
