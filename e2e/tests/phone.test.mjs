// A fan on a phone (390x844, touch, Spanish): every page fits 360-430 px
// without scrolling sideways and has no serious accessibility violation; the
// seat map zooms in on a tap until a seat is a 44 px target; the hold bar
// stays in view; a purchase goes through the sandbox page to the tickets.
// Screenshots: e2e/artifacts/phone-*.png.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { launch } from '../lib/browser.mjs'
import { BASE, seedCatalog } from '../lib/api.mjs'
import { assertAccessible, assertFitsPhones, recordToasts } from '../lib/checks.mjs'

const ART = process.env.E2E_ARTIFACTS ?? new URL('../artifacts', import.meta.url).pathname
mkdirSync(ART, { recursive: true })
const MIN_TAP = 44

let browser, ctx, page, cat, orderId

// What the phone's screen shows (the hold bar is fixed at its bottom).
const shot = (name) => page.screenshot({ path: join(ART, `phone-${name}.png`) })

/** Every page of the phone run: fits each phone width, passes axe, and is photographed. */
async function checkPage(name) {
  await shot(name)
  await assertFitsPhones(page, name)
  await assertAccessible(page, name)
}

/** The distance between two neighbouring seats of a row, as drawn, in CSS px. */
const cellPx = () => page.evaluate(() => {
  const [a, b] = [...document.querySelectorAll('circle.seat[aria-label^="Platea: fila B,"]')].slice(0, 2).map((c) => c.getBoundingClientRect())
  return Math.hypot(a.x - b.x, a.y - b.y)
})

/** Whether the element is entirely inside the viewport. */
const inView = (sel) => page.evaluate((s) => {
  const r = document.querySelector(s).getBoundingClientRect()
  return r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth
}, sel)

describe('a fan on a phone', () => {
  before(async () => {
    cat = await seedCatalog()
    browser = await launch()
    ctx = await browser.newContext({ locale: 'es-ES', viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, baseURL: BASE })
    page = await ctx.newPage()
    page.on('pageerror', (e) => console.log(`[phone] pageerror: ${e.message}`))
  })
  after(async () => {
    await browser?.close()
  })

  test('search: the signed-in header and the result cards fit the screen', async () => {
    await page.goto('/')
    await page.click('#signin-open')
    await page.fill('#signin-name', 'Maximiliano Fernández')
    await page.click('#signin-submit')
    await page.locator('#signout').waitFor()
    await page.locator('a.event-card').first().waitFor()
    assert.ok(await inView('#signout'), '"Salir" is on screen')
    await checkPage('01-search')
  })

  test('event page: tap to zoom until a seat is a 44 px target, pick one off-centre, the hold bar stays in view', async () => {
    await page.goto(`/events/${cat.open.id}`)
    await page.locator('svg.seatmap circle.seat').first().waitFor()
    await page.locator('#live-status[data-status="open"]').waitFor({ timeout: 10000 })
    assert.match(await page.locator('#seatmap-help').innerText(), /^Toca /, 'touch wording, not arrow keys')
    assert.ok(await inView('#action-bar'), 'the hold bar is on screen from the start')
    await checkPage('02-event')

    const small = await cellPx()
    assert.ok(small < MIN_TAP, `the whole venue shows seats smaller than a finger (${small.toFixed(1)} px)`)
    // A tap on the map zooms in there instead of picking a seat too small to hit.
    const b4 = page.locator('circle.seat[aria-label^="Platea: fila B, asiento 4,"]')
    let box = await b4.boundingBox()
    await page.touchscreen.tap(box.x + box.width / 2, box.y + box.height / 2)
    await page.waitForFunction(() => Number(document.getElementById('map-scroll').dataset.zoom) > 1)
    assert.equal(await page.locator('#selection').count(), 0, 'the zooming tap picked nothing')
    const big = await cellPx()
    assert.ok(big >= MIN_TAP, `zoomed in, a seat's cell is ${big.toFixed(1)} px`)
    // The target is the seat's whole cell: a tap 40 % of a cell away from its centre still picks it.
    box = await b4.boundingBox()
    await page.touchscreen.tap(box.x + box.width / 2 + 0.4 * big, box.y + box.height / 2)
    await page.locator('#selection').waitFor()
    assert.match(await page.locator('#selection').innerText(), /Platea · fila B, asiento 4/)
    assert.match(await page.locator('#hold-btn').innerText(), /Reservar 1 entrada/)
    await page.evaluate(() => window.scrollTo(0, 0))
    assert.ok(await inView('#hold-btn'), 'the hold button is on screen with the map at the top')
    await checkPage('03-event-zoomed-selected')

    const toasts = await recordToasts(page)
    await page.locator('#hold-btn').tap()
    await page.locator('#hold-panel').waitFor()
    await page.locator(`circle.seat[aria-label^="Platea: fila B, asiento 4,"][data-status="MINE"]`).waitFor()
    assert.ok(await inView('#checkout-btn'), 'the pay button and the countdown stay on screen')
    assert.match(await page.locator('#action-bar #countdown').innerText(), /^(9|10):\d\d$/)
    // The live map's own frame for this hold arrives within the coalescing window.
    await page.waitForFunction(() => (window.__seatmapCursor ?? '0-0') !== '0-0', null, { timeout: 5000 })
    assert.deepEqual((await toasts()).filter((x) => /adelantado/.test(x)), [], 'no "someone got there first" for our own seat')
    await checkPage('04-event-hold')
  })

  test('checkout on the sandbox page and the order with its ticket', async () => {
    await page.locator('#checkout-btn').tap()
    await page.waitForURL(/\/checkout\//, { timeout: 15000 })
    await page.locator('button[value="succeed"]').waitFor()
    await checkPage('05-sandbox-checkout')
    await page.locator('button[value="succeed"]').tap()
    await page.waitForURL(/\/orders\//)
    orderId = new URL(page.url()).pathname.split('/').pop()
    await page.locator('#order-status[data-status="CONFIRMED"]').waitFor({ timeout: 20000 })
    await page.locator('.ticket .qr svg').first().waitFor()
    await page.locator('details.payments summary').tap()
    await checkPage('06-order-confirmed')
    await page.goto('/orders')
    await page.locator(`a.order-row[href="/orders/${orderId}"]`).waitFor()
    await checkPage('07-my-orders')
  })

  test('the waiting room', async () => {
    await page.goto(`/events/${cat.queued.id}`)
    await page.locator('#queue-banner').waitFor()
    await checkPage('08-queue-event')
    await page.goto(`/queue/${cat.queued.id}`)
    await page.locator('#queue-position, #queue-admitted').first().waitFor({ timeout: 10000 })
    await checkPage('09-waiting-room')
  })

  test('in English, the category chips and the not-found page', async () => {
    await page.goto('/')
    await page.selectOption('#lang', 'en')
    await page.locator('button[data-category="concierto"]', { hasText: 'Concerts' }).waitFor()
    await page.goto('/nothing/here')
    await page.locator('h1').waitFor()
    await checkPage('10-not-found-en')
    await page.selectOption('#lang', 'es')
  })
})
