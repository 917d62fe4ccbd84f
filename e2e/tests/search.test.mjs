// Search as a fan uses it: the filters keep offering the other cities and
// categories once one is chosen, the cards name the artists and the year,
// prices in pesos read as pesos (ISO minor units, not the browser's idea of
// them), a pre-sale says when it opens, and the chips speak English too.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { launch } from '../lib/browser.mjs'
import { BASE, gql, seedCatalog } from '../lib/api.mjs'

let browser, page, cat, bogota, presale

/** A venue in Bogotá with one GA section priced in COP, and its events. */
async function seedBogota(suffix) {
  const { createVenue: venue } = await gql(`mutation($in: CreateVenueInput!) { createVenue(input: $in) { id sections { id } } }`, {
    in: {
      name: `Coliseo ${suffix}`, address: 'Calle 80', city: 'Bogotá', country: 'CO', location: { lat: 4.65, lon: -74.08 },
      sections: [{ name: 'General', kind: 'GENERAL_ADMISSION', capacity: 50, layout: { x: -50, y: 20, width: 100, height: 40 } }],
    },
  })
  const { createArtist: artist } = await gql(`mutation($name: String!) { createArtist(input: {name: $name, genres: ["box"]}) { id } }`, { name: `Púgiles ${suffix}` })
  const day = 24 * 3600 * 1000
  const ev = async (name, category, saleStartsAt) => (await gql(`mutation($in: CreateEventInput!) { createEvent(input: $in) { id name } }`, {
    in: {
      name, description: 'Prueba.', category, startsAt: new Date(Date.now() + 400 * day).toISOString(), venueId: venue.id, artistIds: [artist.id],
      saleStartsAt, prices: [{ sectionId: venue.sections[0].id, amount: 12000000, currency: 'COP' }], maxTicketsPerUser: 4, holdDurationSeconds: 600,
    },
  })).createEvent
  const opens = new Date(Date.now() + 30 * day)
  opens.setUTCHours(15, 0, 0, 0)
  return {
    open: await ev(`Velada ${suffix}`, 'deportes', new Date(Date.now() - 3600 * 1000).toISOString()),
    presale: { ...(await ev(`Preventa ${suffix}`, 'deportes', opens.toISOString())), opens },
  }
}

const card = (id) => page.locator(`a.event-card[data-event="${id}"]`)
const cities = () => page.locator('#city option').allInnerTexts()
const chips = () => page.locator('.cats button[data-category]').evaluateAll((bs) => bs.map((b) => b.dataset.category))

describe('search filters and cards', () => {
  before(async () => {
    cat = await seedCatalog()
    ;({ open: bogota, presale } = await seedBogota(cat.suffix))
    browser = await launch()
    page = await (await browser.newContext({ locale: 'es-ES', baseURL: BASE, timezoneId: 'Europe/Madrid' })).newPage()
    // The search projection follows the catalog within a second or so.
    await page.goto(`/?q=${cat.suffix}`)
    for (let i = 0; i < 40 && (await card(presale.id).count()) === 0; i++) await page.goto(`/?q=${cat.suffix}&try=${i}`)
    await card(presale.id).waitFor()
  })
  after(async () => {
    await browser?.close()
  })

  test('a card: artists, the year, pesos as pesos; a pre-sale says when it opens', async () => {
    const text = await card(bogota.id).innerText()
    assert.match(text, new RegExp(`Con Púgiles ${cat.suffix}`))
    assert.match(text, new RegExp(String(new Date(Date.now() + 400 * 24 * 3600 * 1000).getFullYear())))
    assert.match(text, /120\.000\s*COP/, 'an amount of 12000000 minor units is 120.000 pesos')
    const when = presale.opens.toLocaleString('es-ES', { timeZone: 'Europe/Madrid', hour: '2-digit', minute: '2-digit' })
    assert.match(await card(presale.id).innerText(), new RegExp(`A la venta el .*${when}`))
  })

  test('choosing a city or a category keeps the others on offer', async () => {
    assert.ok((await cities()).includes('Bogotá'))
    await page.selectOption('#city', 'Madrid')
    await card(cat.open.id).waitFor()
    await page.locator('#result-count').filter({ hasText: /^2 eventos$/ }).waitFor()
    assert.ok((await cities()).includes('Bogotá'), `after Madrid the city list still offers Bogotá: ${await cities()}`)
    await page.selectOption('#city', '')
    await page.locator('#result-count').filter({ hasText: /^4 eventos$/ }).waitFor()
    await page.click('.cats button[data-category="deportes"]')
    await page.locator('.cats button[data-category="deportes"][aria-pressed="true"]').waitFor()
    await page.locator('#result-count').filter({ hasText: /^2 eventos$/ }).waitFor()
    await page.locator('#results:not([aria-busy])').waitFor()
    await card(bogota.id).waitFor()
    assert.equal(await card(cat.open.id).count(), 0)
    assert.deepEqual((await chips()).sort(), ['concierto', 'deportes'], 'the concert chip stays next to the chosen one')
    await page.click('.cats button[data-category="concierto"]')
    await card(cat.open.id).waitFor()
  })

  test('in English the category chips are English', async () => {
    await page.selectOption('#lang', 'en')
    assert.equal(await page.locator('.cats button[data-category="deportes"]').innerText(), 'Sports')
    assert.equal(await page.locator('.cats button[data-category="concierto"]').innerText(), 'Concerts')
    await page.selectOption('#lang', 'es')
  })
})
