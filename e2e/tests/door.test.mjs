// The door staff's page under the app's CSP: a fan's ticket bought through
// the API, its code typed at /door by a staff member (development sign-in
// with the staff role): ADMITTED once, then ALREADY_USED; a garbage code is
// INVALID_CODE; the running count follows; the page passes the axe checks.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { launch } from '../lib/browser.mjs'
import { BASE, devToken, gql, seedCatalog } from '../lib/api.mjs'
import { assertAccessible, assertNoHorizontalOverflow } from '../lib/checks.mjs'

let browser, ctx, page, cat, code

/** A fan buys one GA unit of the open event and pays on paysim: the ticket's code. */
async function buyTicket(eventId) {
  const fan = await devToken('Fan Puerta')
  const { event } = await gql(`query($id: ID!) { event(id: $id) { venue { sections { id kind } } } }`, { id: eventId }, fan)
  const ga = event.venue.sections.find((s) => s.kind === 'GENERAL_ADMISSION')
  const { createHold: hold } = await gql(`mutation($in: CreateHoldInput!) { createHold(input: $in) { id } }`,
    { in: { eventId, generalAdmission: [{ sectionId: ga.id, quantity: 1 }], idempotencyKey: `door-${Date.now()}` } }, fan)
  const { createOrder: order } = await gql(`mutation($in: CreateOrderInput!) { createOrder(input: $in) { id payments { checkoutUrl } } }`,
    { in: { holdId: hold.id, idempotencyKey: `door-${hold.id}` } }, fan)
  let url = order.payments[0]?.checkoutUrl
  for (let i = 0; !url && i < 100; i++) {
    await new Promise((r) => setTimeout(r, 200))
    url = (await gql(`query($id: ID!) { order(id: $id) { payments { checkoutUrl } } }`, { id: order.id }, fan)).order.payments[0]?.checkoutUrl
  }
  const res = await fetch(url, { method: 'POST', body: new URLSearchParams({ outcome: 'succeed' }), redirect: 'manual' })
  assert.ok(res.status < 400, `paysim checkout: HTTP ${res.status}`)
  for (let i = 0; i < 150; i++) {
    const { order: o } = await gql(`query($id: ID!) { order(id: $id) { status tickets { code status } } }`, { id: order.id }, fan)
    if (o.status === 'CONFIRMED') return o.tickets[0].code
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error('the order was never confirmed')
}

describe('door check-in', () => {
  before(async () => {
    cat = await seedCatalog()
    code = await buyTicket(cat.open.id)
    browser = await launch()
    ctx = await browser.newContext({ locale: 'es-ES', viewport: { width: 390, height: 844 }, baseURL: BASE })
    page = await ctx.newPage()
    page.on('pageerror', (e) => console.log(`[door] pageerror: ${e.message}`))
    page.on('console', (m) => { if (m.type() === 'error') console.log(`[door] console: ${m.text()}`) })
  })
  after(async () => { await browser?.close() })

  test('staff sign in at /door, admit a typed code once, then ALREADY_USED', async () => {
    await page.goto(`/door?event=${cat.open.id}`)
    await page.locator('#door-staff-only').waitFor()
    await page.fill('#door-staff-name', 'Puerta Norte')
    await page.click('#door-staff-signin')
    await page.locator(`#door-event option[value="${cat.open.id}"]`).waitFor({ state: 'attached' })
    assert.equal(await page.locator('#door-event').inputValue(), cat.open.id)
    await page.locator('#nav-door').waitFor()
    await assertAccessible(page, 'door')

    await page.fill('#door-code', code)
    await page.click('#door-check')
    await page.locator('#door-result[data-outcome="ADMITTED"]').waitFor()
    assert.match(await page.locator('#door-result').innerText(), /ADMITIDA/)
    assert.match(await page.locator('#door-count').innerText(), /1 de 1/)
    await assertAccessible(page, 'door admitted')
    await assertNoHorizontalOverflow(page, 'door admitted')

    await page.fill('#door-code', code)
    await page.click('#door-check')
    await page.locator('#door-result[data-outcome="ALREADY_USED"]').waitFor()
    assert.match(await page.locator('#door-result').innerText(), /YA USADA/)
    assert.match(await page.locator('#door-count').innerText(), /1 de 2/)
    await assertAccessible(page, 'door already used')

    await page.fill('#door-code', 'not-a-ticket')
    await page.click('#door-check')
    await page.locator('#door-result[data-outcome="INVALID_CODE"]').waitFor()
    assert.match(await page.locator('#door-count').innerText(), /1 de 3/)
  })
})
