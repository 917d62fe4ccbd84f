// The GraphQL Playground at /playground, with every request to another
// origin refused (as on a machine without internet): it loads, opens with
// the development token in its HEADERS, runs a query over HTTP and a
// subscription over WebSocket (graphql-transport-ws), under its own strict
// Content-Security-Policy.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { launch } from '../lib/browser.mjs'
import { BASE, devToken, gql, seedCatalog } from '../lib/api.mjs'

const ART = process.env.E2E_ARTIFACTS ?? new URL('../artifacts', import.meta.url).pathname

let browser, ctx, page, cat
const outside = [] // requests to any other origin: there must be none
const problems = [] // page errors and CSP refusals

async function open(params = {}) {
  const q = new URLSearchParams(params).toString()
  const res = await page.goto(`/playground${q ? '?' + q : ''}`)
  await page.locator('.graphiql-container .graphiql-execute-button').waitFor({ timeout: 20000 })
  if (params.query) await page.locator('.graphiql-query-editor .CodeMirror', { hasText: params.query.split('(')[0].split(' {')[0] }).waitFor()
  return res
}

/** The result pane once it shows something matching re. */
async function result(re) {
  const pane = page.locator('.result-window')
  await pane.filter({ hasText: re }).waitFor({ timeout: 15000 })
  return pane.innerText()
}

describe('the GraphQL Playground, offline', () => {
  before(async () => {
    cat = await seedCatalog()
    browser = await launch()
    ctx = await browser.newContext({ baseURL: BASE, viewport: { width: 1280, height: 900 } })
    await ctx.route((url) => url.origin !== new URL(BASE).origin, (route) => {
      outside.push(route.request().url())
      return route.abort('internetdisconnected')
    })
    page = await ctx.newPage()
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`))
    page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`) })
  })
  after(async () => {
    await browser?.close()
  })

  test('loads from the server alone, under a strict CSP, with the development token in HEADERS', async () => {
    const res = await open()
    const csp = res.headers()['content-security-policy'] ?? ''
    assert.match(csp, /script-src 'self'(;|$)/, 'no inline script, no eval')
    assert.match(csp, /default-src 'self'/)
    await page.getByText('Headers', { exact: true }).click()
    await page.locator('.graphiql-editor-tool .CodeMirror', { hasText: 'Bearer ey' }).waitFor()
    await page.screenshot({ path: join(ART, 'playground-01-opened.png') })
    assert.deepEqual(outside, [], 'nothing fetched from another origin')
  })

  test('runs a query (introspection included: the schema explorer has the types)', async () => {
    await open({ query: `query Who { me { id } event(id: "${cat.open.id}") { name venue { city } } }` })
    await page.click('.graphiql-execute-button')
    const text = await result(/"city"/)
    assert.match(text, /"id": "dev-playground"/, 'the development token authenticated the query')
    assert.match(text, new RegExp(cat.open.name))
    await page.locator('button[aria-label="Show Documentation Explorer"]').click()
    await page.locator('.graphiql-doc-explorer').getByText('Query', { exact: true }).first().waitFor()
    await page.screenshot({ path: join(ART, 'playground-02-query.png') })
  })

  test('runs a subscription over WebSocket and shows the live seat map as it changes', async () => {
    const { event } = await gql(`query($id: ID!) { event(id: $id) { venue { sections { name seats { id } } } } }`, { id: cat.open.id })
    const seatId = event.venue.sections.find((s) => s.name === 'Platea').seats[20].id
    await open({ query: 'subscription Live($e: ID!) { seatMapUpdates(eventId: $e) { cursor seats { seatId status } } }', variables: JSON.stringify({ e: cat.open.id }) })
    await page.click('.graphiql-execute-button')
    await page.locator('.graphiql-execute-button[aria-label="Stop query (Ctrl-Enter)"]').waitFor()
    // A fan holds a seat: its frame reaches the running subscription.
    const tok = await devToken('Playground Fan')
    await gql('mutation($in: CreateHoldInput!) { createHold(input: $in) { id } }', { in: { eventId: cat.open.id, seatIds: [seatId], idempotencyKey: `pg-${Date.now()}` } }, tok)
    const text = await result(new RegExp(`"seatId": "${seatId}",\\s*"status": "HELD"`))
    assert.match(text, /"cursor"/)
    await page.screenshot({ path: join(ART, 'playground-03-subscription.png') })
    assert.deepEqual(outside, [], 'nothing fetched from another origin')
    assert.deepEqual(problems.filter((p) => /Content Security Policy|Refused/.test(p)), [], 'no CSP refusal')
  })
})
