export type Cleanup = (() => void) | void
export type Page = (root: HTMLElement, params: string[], query: URLSearchParams) => Cleanup

const routes: [RegExp, Page][] = []
let cleanup: Cleanup
let onRoute: (path: string) => void = () => {}

export function route(re: RegExp, page: Page) {
  routes.push([re, page])
}
export function setOnRoute(f: (path: string) => void) {
  onRoute = f
}

export function navigate(to: string, opts: { replace?: boolean } = {}) {
  if (opts.replace) history.replaceState(null, '', to)
  else history.pushState(null, '', to)
  render()
  window.scrollTo(0, 0)
}

export function render() {
  const root = document.getElementById('main')!
  if (typeof cleanup === 'function') cleanup()
  cleanup = undefined
  root.replaceChildren()
  const path = location.pathname
  const query = new URLSearchParams(location.search)
  for (const [re, page] of routes) {
    const m = re.exec(path)
    if (m) {
      cleanup = page(root, m.slice(1).map(decodeURIComponent), query)
      onRoute(path)
      return
    }
  }
  routes[routes.length - 1][1](root, [], query) // the not-found page is last
  onRoute(path)
}

export function startRouter() {
  window.addEventListener('popstate', render)
  document.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return
    const a = (e.target as Element).closest?.('a')
    if (!a || a.target || a.hasAttribute('download')) return
    const url = new URL(a.href, location.href)
    if (url.origin !== location.origin || url.pathname.startsWith('/api/') || url.pathname === '/playground') return
    e.preventDefault()
    navigate(url.pathname + url.search)
  })
  render()
}
