// Launches Debian's Chromium through playwright-core (it cannot download its
// own browser here). Playwright itself gives every launch a fresh, empty
// temporary --user-data-dir (it refuses one in args), removed on close; each
// browser context is a separate, clean profile (one per simulated user).
import { chromium } from 'playwright-core'

export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
]

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
  })
}
