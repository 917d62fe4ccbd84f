// End-to-end scenarios in a real browser (Debian's Chromium via playwright-core):
// two fans on one event, a live seat map, a conflict, checkout on the sandbox
// provider's hosted page, a reload mid-checkout, and the waiting room.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { launch } from '../lib/browser.mjs'
import { BASE, devToken, gql, seedCatalog } from '../lib/api.mjs'
import { assertAccessible, assertNoHorizontalOverflow, recordToasts } from '../lib/checks.mjs'

const ART = process.env.E2E_ARTIFACTS ?? new URL('../artifacts', import.meta.url).pathname
mkdirSync(ART, { recursive: true })

let browser, cat
let A, B // { ctx, page }
const seatIds = {}
let orderId
const B_WS = { block: false, queued: [], sockets: 0 }

async function shot(page, name) {
  await page.screenshot({ path: join(ART, `${name}.png`), fullPage: true })
}

/** A page of the purchase path: photographed, no sideways scroll, no serious accessibility violation. */
async function checkPage(page, name) {
  await shot(page, name)
  await assertNoHorizontalOverflow(page, name)
  await assertAccessible(page, name)
}

async function user(name, { locale = 'es-ES', viewport = { width: 1280, height: 900 }, routeWs } = {}) {
  const ctx = await browser.newContext({ locale, viewport, baseURL: BASE })
  if (routeWs) await routeWs(ctx)
  const page = await ctx.newPage()
  page.on('pageerror', (e) => console.log(`[${name}] pageerror: ${e.message}`))
  page.on('console', (m) => { if (m.type() === 'error') console.log(`[${name}] console: ${m.text()}`) })
  await page.goto('/')
  await page.click('#signin-open')
  await page.fill('#signin-name', name)
  await page.click('#signin-submit')
  await page.locator('#user-name').filter({ hasText: name }).waitFor()
  return { ctx, page, name }
}

const seat = (page, section, row, n) => page.locator(`circle[aria-label^="${section}: fila ${row}, asiento ${n},"]`)

async function openEvent(u, eventId) {
  await u.page.goto(`/events/${eventId}`)
  await u.page.locator('svg.seatmap circle.seat').first().waitFor()
  await u.page.locator('#live-status[data-status="open"]').waitFor({ timeout: 10000 })
}

describe('fans in a real browser', () => {
  before(async () => {
    cat = await seedCatalog()
    browser = await launch()
    A = await user('Ana')
    B = await user('Bruno', {
      // B's WebSocket goes through a relay the test can pause, to make B's map stale on purpose.
      routeWs: (ctx) => ctx.routeWebSocket(/\/graphql$/, (ws) => {
        B_WS.sockets++
        const server = ws.connectToServer()
        server.onMessage((m) => (B_WS.block ? B_WS.queued.push(() => ws.send(m)) : ws.send(m)))
      }),
    })
  })
  after(async () => {
    await browser?.close()
  })

  test('search finds the event, with date, venue, price range and availability', async () => {
    const { page } = A
    await page.goto('/')
    await page.fill('#q', cat.suffix)
    await page.keyboard.press('Enter')
    const card = page.locator(`a.event-card[data-event="${cat.open.id}"]`)
    try {
      await card.waitFor({ timeout: 6000 })
    } catch {
      // The search projection may lag the catalog: the unfiltered listing has it too.
      await page.goto('/')
      await card.waitFor({ timeout: 10000 })
    }
    const text = await card.innerText()
    assert.match(text, /Sala Prueba/)
    assert.match(text, /25\s*€\s*–\s*45\s*€/)
    assert.match(text, /quedan \d+/)
    await checkPage(page, '01-search-results')
  })

  test('both fans open the event; the seat map is drawn and live', async () => {
    await Promise.all([openEvent(A, cat.open.id), openEvent(B, cat.open.id)])
    assert.ok(B_WS.sockets > 0, "B's seat map should be live over the WebSocket")
    const c6 = seat(A.page, 'Platea', 'C', 6)
    seatIds.c6 = await c6.getAttribute('data-seat')
    assert.ok(seatIds.c6)
    assert.equal(await c6.getAttribute('data-status'), 'AVAILABLE')
    assert.match(await c6.getAttribute('aria-label'), /^Platea: fila C, asiento 6, disponible, 45\s*€$/)
    await checkPage(A.page, '02-event-page-A')
  })

  test("A holds a seat and B's map shows it held within 2 s", async () => {
    await seat(A.page, 'Platea', 'C', 6).click()
    await A.page.locator('#selection').waitFor()
    await shot(A.page, '03-A-selected-seat')
    const toasts = await recordToasts(A.page)
    const cursor = await A.page.evaluate(() => window.__seatmapCursor ?? '0-0')
    await A.page.click('#hold-btn')
    await A.page.locator('#hold-panel').waitFor()
    const t0 = Date.now()
    await B.page.locator(`[data-seat="${seatIds.c6}"][data-status="HELD"]`).waitFor({ timeout: 2000 })
    const ms = Date.now() - t0
    console.log(`B saw the hold ${ms} ms after A's hold panel appeared`)
    assert.ok(ms < 2000)
    // A's own map has had the frame of this hold too: its own seat is no reason for a warning.
    await A.page.waitForFunction((c) => (window.__seatmapCursor ?? '0-0') !== c, cursor, { timeout: 5000 })
    assert.deepEqual((await toasts()).filter((x) => /adelantado/.test(x)), [], 'no "someone got there first" toast after our own hold')
    // The countdown comes from the server's expiresAt.
    const clock = await A.page.locator('#countdown').innerText()
    assert.match(clock, /^(9|10):\d\d$/)
    await checkPage(A.page, '04-A-hold-countdown')
    await shot(B.page, '05-B-sees-seat-held')
  })

  test('the hold survives a reload; A cancels; the seat is free again on both maps', async () => {
    await A.page.reload()
    await A.page.locator('#hold-panel').waitFor()
    assert.equal(await seat(A.page, 'Platea', 'C', 6).getAttribute('data-status'), 'MINE')
    await A.page.click('#cancel-hold')
    await A.page.locator('#hold-btn').waitFor()
    await B.page.locator(`[data-seat="${seatIds.c6}"][data-status="AVAILABLE"]`).waitFor({ timeout: 3000 })
  })

  test("B's attempt on the same seat, from a stale map, shows a clear conflict", async () => {
    B_WS.block = true // B stops hearing about changes: its map goes stale
    try {
    await seat(B.page, 'Platea', 'C', 6).click()
    await seat(B.page, 'Platea', 'C', 7).click()
    await B.page.locator('#selection').waitFor()
    // A takes C6 first, with the keyboard: focus C5, arrow right, Enter.
    await seat(A.page, 'Platea', 'C', 5).focus()
    await A.page.keyboard.press('ArrowRight')
    assert.match(await A.page.evaluate(() => document.activeElement?.getAttribute('aria-label')), /^Platea: fila C, asiento 6, disponible/)
    await A.page.keyboard.press('Enter')
    await A.page.click('#hold-btn')
    await A.page.locator('#hold-panel').waitFor()
    assert.equal(await B.page.locator(`[data-seat="${seatIds.c6}"]`).getAttribute('data-status'), 'SELECTED', "B's map is stale")
    await B.page.click('#hold-btn')
    const msg = B.page.locator('#event-msg')
    await msg.filter({ hasText: 'Alguien se ha adelantado' }).waitFor({ timeout: 5000 })
    assert.match(await msg.innerText(), /Platea, fila C, asiento 6/)
    const c6 = B.page.locator(`[data-seat="${seatIds.c6}"]`)
    assert.match(await c6.getAttribute('class'), /conflict/)
    assert.equal(await c6.getAttribute('data-status'), 'HELD')
    // Nothing was held for B: all or nothing.
    assert.equal(await B.page.locator('#hold-panel').count(), 0)
    await shot(B.page, '06-B-conflict')
    } finally {
      B_WS.block = false
      for (const send of B_WS.queued.splice(0)) send()
    }
  })

  test('A pays on the sandbox page; a reload mid-checkout keeps the order; CONFIRMED with a QR code', async () => {
    const { page } = A
    // B's connection drops now; it must resume from its cursor, without a reload.
    const socketsBefore = B_WS.sockets
    await B.page.evaluate(() => { window.__noReload = true; window.__ticketing.ws.drop() })
    await page.click('#checkout-btn')
    await page.waitForURL(/\/checkout\//, { timeout: 15000 })
    await checkPage(page, '07-A-sandbox-checkout')
    // Mid-checkout: back to the shop, reload: the order is still there.
    await page.goBack()
    await page.waitForURL(/\/orders\//)
    orderId = new URL(page.url()).pathname.split('/').pop()
    await page.locator('#order-status[data-status="AWAITING_PAYMENT"]').waitFor()
    await page.reload()
    await page.locator('#order-status[data-status="AWAITING_PAYMENT"]').waitFor()
    await page.locator('#pay-link').waitFor()
    await checkPage(page, '08-A-order-after-reload')
    await page.click('#pay-link')
    await page.waitForURL(/\/checkout\//)
    await page.click('button[value="succeed"]')
    await page.waitForURL(new RegExp(`/orders/${orderId}`))
    await page.locator('#order-status[data-status="CONFIRMED"]').waitFor({ timeout: 20000 })
    await page.locator('.ticket .qr svg').first().waitFor()
    assert.equal(await page.locator('.ticket').count(), 1)
    await checkPage(page, '09-A-order-confirmed-qr')
    // B's map shows the seat sold.
    await B.page.locator(`[data-seat="${seatIds.c6}"][data-status="SOLD"]`).waitFor({ timeout: 5000 })
    assert.ok(B_WS.sockets > socketsBefore, 'B reconnected')
    assert.equal(await B.page.evaluate(() => window.__noReload), true, 'B did not reload')
    await B.page.locator('#live-status[data-status="open"]').waitFor()
    await shot(B.page, '10-B-seat-sold')
  })

  test("A's orders list shows the confirmed order", async () => {
    await A.page.click('#nav-orders')
    await A.page.locator(`a.order-row[href="/orders/${orderId}"]`).waitFor()
    assert.match(await A.page.locator(`a.order-row[href="/orders/${orderId}"]`).innerText(), /Confirmado/)
    await checkPage(A.page, '11-A-my-orders')
  })

  test('"best seats together" holds adjacent seats', async () => {
    const { page } = A
    await page.goto(`/events/${cat.open.id}`)
    await page.locator('#best-btn').waitFor()
    await page.selectOption('#best-qty', '2')
    await page.selectOption('#best-section', { label: 'Anfiteatro · 25 €' })
    await page.click('#best-btn')
    await page.locator('#hold-panel').waitFor()
    const items = await page.locator('#hold-panel .sel-list li').allInnerTexts()
    assert.equal(items.length, 2)
    const nums = items.map((x) => x.match(/fila (\w+), asiento (\d+)/)).map((m) => [m[1], Number(m[2])])
    assert.equal(nums[0][0], nums[1][0], 'same row')
    assert.equal(Math.abs(nums[0][1] - nums[1][1]), 1, 'side by side')
    await shot(page, '12-A-best-seats-hold')
    await page.click('#cancel-hold')
    await page.locator('#hold-btn').waitFor()
  })

  test('a queue-protected event sends B through the waiting room, then to the seat map', async () => {
    // Three fans are already queued, so B waits a little.
    for (const n of ['Cola1', 'Cola2', 'Cola3']) await gql('mutation($e: ID!) { joinQueue(eventId: $e) { status } }', { e: cat.queued.id }, await devToken(n))
    const { page } = B
    await page.goto(`/events/${cat.queued.id}`)
    await page.locator('#queue-banner').waitFor()
    await shot(page, '13-B-queue-event-banner')
    await seat(page, 'Platea', 'A', 1).click() // picking a seat needs the waiting room
    await page.waitForURL(new RegExp(`/queue/${cat.queued.id}`))
    const pos = page.locator('#queue-position')
    await pos.waitFor({ timeout: 10000 })
    await checkPage(page, '14-B-waiting-room')
    // Admitted: the page moves to the seat map by itself.
    await page.waitForURL(new RegExp(`/events/${cat.queued.id}$`), { timeout: 60000 })
    await page.locator('#admitted-banner').waitFor()
    await seat(page, 'Platea', 'A', 1).click()
    await page.click('#hold-btn')
    await page.locator('#hold-panel').waitFor()
    await shot(page, '15-B-admitted-hold')
  })

  test('B declines on the sandbox page, sees PAYMENT_FAILED, retries and gets the ticket', async () => {
    const { page } = B
    await page.click('#checkout-btn')
    await page.waitForURL(/\/checkout\//, { timeout: 15000 })
    await page.click('button[value="decline"]')
    await page.waitForURL(/\/orders\//)
    await page.locator('#order-status[data-status="PAYMENT_FAILED"]').waitFor({ timeout: 20000 })
    await page.locator('#retry-pay').waitFor()
    await checkPage(page, '16-B-payment-failed')
    await page.click('#retry-pay')
    await page.waitForURL(/\/checkout\//, { timeout: 15000 })
    await page.click('button[value="succeed"]')
    await page.waitForURL(/\/orders\//)
    await page.locator('#order-status[data-status="CONFIRMED"]').waitFor({ timeout: 20000 })
    await page.locator('.ticket .qr svg').first().waitFor()
    await shot(page, '17-B-confirmed-after-retry')
  })

  test('the language switch turns the app into English', async () => {
    const { page } = A
    await page.goto('/orders')
    await page.selectOption('#lang', 'en')
    await page.locator('h1', { hasText: 'My orders' }).waitFor()
    assert.match(await page.locator(`a.order-row[href="/orders/${orderId}"]`).innerText(), /Confirmed/)
    await page.selectOption('#lang', 'es')
  })

  test('phone-sized, English: the event page and GA quantities', async () => {
    const ctx = await browser.newContext({ locale: 'en-US', viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, baseURL: BASE })
    const page = await ctx.newPage()
    await page.goto(`/events/${cat.open.id}`)
    await page.locator('svg.seatmap circle.seat').first().waitFor()
    assert.match(await page.locator('#hold-btn').innerText(), /Pick your seats/)
    await page.getByRole('button', { name: '+ Pista' }).click()
    await page.getByRole('button', { name: '+ Pista' }).click()
    assert.match(await page.locator('#hold-btn').innerText(), /Hold 2 tickets/)
    await shot(page, '18-phone-event-en')
    await ctx.close()
  })
})
