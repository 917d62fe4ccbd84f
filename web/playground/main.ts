// The GraphQL Playground served at /playground: GraphiQL from npm, bundled
// at build time and embedded in the binary (web/playground.go), so it works
// without internet and under a strict Content-Security-Policy (no inline
// script, no eval, nothing from another origin).
//
// Queries and mutations go to /graphql over HTTP with the headers of the
// HEADERS tab; subscriptions go over WebSocket (graphql-transport-ws), with
// the Authorization header of that tab sent in connection_init, as the
// contract says. With development sign-in on, the page asks the server for a
// token and opens with it in the HEADERS tab. ?query= and ?variables= set the
// initial editors (for links from docs).
import { createElement } from 'react'
import { createRoot } from 'react-dom/client'
import { GraphiQL } from 'graphiql'
import type { Fetcher } from '@graphiql/toolkit'
import { createClient, type Client } from 'graphql-ws'
import { Kind, parse, type DocumentNode } from 'graphql'
import 'graphiql/style.css'
import './playground.css'

const httpURL = new URL('/graphql', location.href).toString()
const wsURL = httpURL.replace(/^http/, 'ws')

const DEFAULT_QUERY = `# Ticketing GraphQL Playground. Press the run button (or Ctrl-Enter).
# The HEADERS tab carries the token: {"Authorization": "Bearer <JWT>"}
# (scripts/dev.sh prints ready-made ones; with development sign-in on, one is
# already there). Subscriptions run over WebSocket (graphql-transport-ws).

query Search {
  searchEvents(filter: { text: "rock" }, first: 5) {
    totalCount
    edges { node { id name startsAt venue { name city } minPrice { amount currency } } }
  }
}

# Paste an event id from the result, select this operation and run it: every
# change of the seat map arrives below while it runs.
subscription LiveSeatMap($eventId: ID!) {
  seatMapUpdates(eventId: $eventId) {
    cursor
    seats { seatId status version }
    generalAdmission { sectionId available version }
  }
}
`

// One WebSocket client per Authorization value: connection_init is sent once
// per connection, so other credentials need another connection.
const clients = new Map<string, Client>()
function wsClient(authorization: string): Client {
  let c = clients.get(authorization)
  if (!c) {
    c = createClient({ url: wsURL, lazy: true, connectionParams: authorization ? { Authorization: authorization } : {} })
    clients.set(authorization, c)
  }
  return c
}

function headerValue(headers: Record<string, unknown> | undefined, name: string): string {
  for (const [k, v] of Object.entries(headers ?? {})) if (k.toLowerCase() === name) return String(v)
  return ''
}

/** Whether the operation to run (the named one, or the only one) is a subscription. */
function isSubscription(query: string, operationName?: string | null, given?: DocumentNode): boolean {
  let doc = given
  if (!doc) {
    try {
      doc = parse(query)
    } catch {
      return false // the server answers with the syntax error
    }
  }
  const ops = doc.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION)
  const op = operationName ? ops.find((d) => d.name?.value === operationName) : ops.length === 1 ? ops[0] : undefined
  return op?.operation === 'subscription'
}

const fetcher: Fetcher = (params, opts) => {
  if (isSubscription(params.query, params.operationName, opts?.documentAST)) {
    // graphql-ws yields formatted results, which is what GraphiQL shows.
    return wsClient(headerValue(opts?.headers, 'authorization')).iterate({
      query: params.query,
      operationName: params.operationName ?? undefined,
      variables: params.variables ?? undefined,
    }) as AsyncIterable<any>
  }
  return fetch(httpURL, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...(opts?.headers ?? {}) },
    body: JSON.stringify(params),
  }).then((r) => r.json())
}

/** With development sign-in on: a fresh token for "playground" in the HEADERS tab. */
async function devHeaders(): Promise<string | undefined> {
  try {
    const cfg = await fetch('/api/dev/config').then((r) => r.json())
    if (!cfg.devSignIn) return undefined
    const r = await fetch('/api/dev/token', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'playground' }) })
    const j = await r.json()
    return j.token ? JSON.stringify({ Authorization: `Bearer ${j.token}` }, null, 2) : undefined
  } catch {
    return undefined
  }
}

async function start() {
  const q = new URLSearchParams(location.search)
  const headers = await devHeaders()
  const root = document.getElementById('graphiql')!
  createRoot(root).render(
    createElement(GraphiQL, {
      fetcher,
      defaultQuery: DEFAULT_QUERY,
      query: q.get('query') ?? undefined,
      variables: q.get('variables') ?? undefined,
      headers,
      defaultEditorToolsVisibility: headers ? 'headers' : true,
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: false,
    }),
  )
}

start()
