// Checks every page of the browser tests goes through: no sideways scroll,
// no serious or critical accessibility violation (axe-core), and no toast
// that should not be there.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
// Evaluated through the DevTools protocol, which a page's CSP does not govern.
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8')

/** The phone widths the layout must fit without scrolling sideways. */
export const PHONE_WIDTHS = [360, 390, 430]

/** Fails if the page scrolls sideways; names the elements that stick out. */
export async function assertNoHorizontalOverflow(page, what) {
  const r = await page.evaluate(() => {
    const vw = document.documentElement.clientWidth
    const wide = []
    for (const el of document.querySelectorAll('body *')) {
      const b = el.getBoundingClientRect()
      // A zoomed-in seat map pans inside its own box; that is not the page's width.
      if (b.width > 0 && b.right > vw + 0.5 && !el.closest('.map-scroll')) wide.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${String(el.className?.baseVal ?? el.className).trim().replace(/\s+/g, '.')} ${Math.round(b.right)}px`)
    }
    return { scrollWidth: document.documentElement.scrollWidth, vw, wide: wide.slice(0, 5) }
  })
  assert.ok(r.scrollWidth <= r.vw, `${what}: the page scrolls sideways at ${r.vw}px (scrollWidth ${r.scrollWidth}; ${r.wide.join(', ')})`)
}

/** assertNoHorizontalOverflow at every phone width, then back to the page's own viewport. */
export async function assertFitsPhones(page, what) {
  const own = page.viewportSize()
  for (const width of PHONE_WIDTHS) {
    await page.setViewportSize({ width, height: own.height })
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))))
    await assertNoHorizontalOverflow(page, `${what} at ${width}px`)
  }
  await page.setViewportSize(own)
}

/** Runs axe-core on the page: no serious or critical violation (WCAG 2.x A and AA, and best practices). */
export async function assertAccessible(page, what) {
  // A list being refreshed is dimmed (aria-busy): judge the settled page.
  await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'), null, { timeout: 10000 })
  if (!(await page.evaluate(() => !!window.axe))) await page.evaluate(AXE)
  const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }))
  const bad = res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  assert.deepEqual(
    bad.map((v) => `${v.impact} ${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`),
    [],
    `${what}: accessibility violations`,
  )
}

/** Starts recording every text the toast shows; returns a function that reads them. */
export async function recordToasts(page) {
  await page.evaluate(() => {
    window.__toasts = []
    const el = document.getElementById('toast')
    new MutationObserver(() => el.textContent && window.__toasts.push(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true })
  })
  return () => page.evaluate(() => window.__toasts)
}
