import { errorText, gql, EVENT_CARD } from '../api'
import { h, replace } from '../dom'
import { icon } from '../icons'
import { CATEGORIES, categoryLabel, dayMonth, locale, money, t, timeOnly } from '../i18n'
import { type Page } from '../router'
import { saleText } from './event'

const SEARCH = `query Search($filter: EventSearchInput, $after: String) {
  searchEvents(filter: $filter, first: 12, after: $after) {
    totalCount
    edges { cursor distanceKm node { ${EVENT_CARD} } }
    pageInfo { hasNextPage endCursor }
    facets { categories { value count } cities { value count } }
  }
}`
// With a city or a category chosen, the facets of the results name only that
// city or category: the other choices come from the same search without
// those two filters (one request, two root fields).
const SEARCH_WITH_CHOICES = `query Search($filter: EventSearchInput, $after: String, $choices: EventSearchInput) {
  searchEvents(filter: $filter, first: 12, after: $after) {
    totalCount
    edges { cursor distanceKm node { ${EVENT_CARD} } }
    pageInfo { hasNextPage endCursor }
  }
  choices: searchEvents(filter: $choices, first: 1) {
    facets { categories { value count } cities { value count } }
  }
}`
const LISTING = `query Listing($after: String, $category: String, $city: String) {
  events(first: 12, after: $after, category: $category, city: $city) {
    totalCount
    edges { cursor node { ${EVENT_CARD} } }
    pageInfo { hasNextPage endCursor }
  }
}`


interface State {
  q: string
  city: string
  cat: string
  from: string
  to: string
  near: { lat: number; lon: number } | null
}

export const searchPage: Page = (root, _params, query) => {
  let alive = true
  let seq = 0
  const st: State = {
    q: query.get('q') ?? '',
    city: query.get('city') ?? '',
    cat: query.get('cat') ?? '',
    from: query.get('from') ?? '',
    to: query.get('to') ?? '',
    near: query.get('lat') ? { lat: Number(query.get('lat')), lon: Number(query.get('lon')) } : null,
  }
  let facets: { categories: { value: string; count: number }[]; cities: { value: string; count: number }[] } | null = null

  const text = h('input', { type: 'search', id: 'q', name: 'q', value: st.q, placeholder: t('searchPlaceholder'), 'aria-label': t('search'), autocomplete: 'off' })
  const city = h('select', { id: 'city', 'aria-label': t('city') })
  const near = h('button', { type: 'button', class: 'btn ghost', id: 'near-me', 'aria-pressed': String(!!st.near) })
  const cats = h('div', { class: 'cats', role: 'group', 'aria-label': t('category') })
  const from = h('input', { type: 'date', id: 'from', value: st.from, 'aria-label': t('from') })
  const to = h('input', { type: 'date', id: 'to', value: st.to, 'aria-label': t('to') })
  const count = h('p', { class: 'muted', id: 'result-count', 'aria-live': 'polite' })
  const note = h('p', { class: 'msg warn', hidden: true })
  const grid = h('div', { class: 'cards', id: 'results' })
  let debounce = 0
  const more = h('div', { class: 'more' })

  root.append(
    h('section', { class: 'hero' },
      h('h1', null, t('searchTitle')),
      h('form', { class: 'search', role: 'search', onsubmit: (e: Event) => { e.preventDefault(); clearTimeout(debounce); st.q = text.value.trim(); run() } },
        text, h('button', { class: 'btn primary', type: 'submit' }, icon('search'), t('search'))),
      h('div', { class: 'filters' },
        city, near,
        h('label', { class: 'date' }, h('span', null, t('from')), from),
        h('label', { class: 'date' }, h('span', null, t('to')), to)),
      cats,
    ),
    h('section', { class: 'page' }, count, note, grid, more),
  )

  // Typing searches 300 ms after the last key; submitting searches at once
  // and drops the pending one (a second search would redraw the list again).
  text.addEventListener('input', () => {
    clearTimeout(debounce)
    debounce = window.setTimeout(() => { st.q = text.value.trim(); run() }, 300)
  })
  city.addEventListener('change', () => { st.city = city.value; st.near = null; run() })
  from.addEventListener('change', () => { st.from = from.value; run() })
  to.addEventListener('change', () => { st.to = to.value; run() })
  near.addEventListener('click', () => {
    if (st.near) { st.near = null; run(); return }
    if (!navigator.geolocation) { note.hidden = false; note.textContent = t('noLocation'); return }
    near.textContent = t('locating')
    navigator.geolocation.getCurrentPosition(
      (p) => { st.near = { lat: p.coords.latitude, lon: p.coords.longitude }; st.city = ''; run() },
      () => { note.hidden = false; note.textContent = t('noLocation'); drawFilters() },
      { timeout: 10000, maximumAge: 600000 },
    )
  })

  function drawFilters() {
    const cityValues = facets?.cities.map((c) => c.value) ?? []
    if (st.city && !cityValues.includes(st.city)) cityValues.unshift(st.city)
    replace(city, h('option', { value: '' }, t('anyCity')), ...cityValues.map((c) => h('option', { value: c, selected: c === st.city }, c)))
    replace(near, icon('locate'), st.near ? `${t('nearMeOn', { km: 50 })} ✕` : t('nearMe'))
    near.setAttribute('aria-pressed', String(!!st.near))
    const catValues = facets?.categories.length ? facets.categories.map((c) => c.value) : [...CATEGORIES]
    if (st.cat && !catValues.includes(st.cat)) catValues.unshift(st.cat)
    replace(cats,
      h('button', { type: 'button', class: `chip-btn${st.cat ? '' : ' on'}`, 'aria-pressed': String(!st.cat), onclick: () => { st.cat = ''; run() } }, t('allCategories')),
      ...catValues.map((c) => h('button', { type: 'button', class: `chip-btn${st.cat === c ? ' on' : ''}`, 'aria-pressed': String(st.cat === c), 'data-category': c, onclick: () => { st.cat = st.cat === c ? '' : c; run() } }, categoryLabel(c))))
  }

  function syncUrl() {
    const p = new URLSearchParams()
    if (st.q) p.set('q', st.q)
    if (st.city) p.set('city', st.city)
    if (st.cat) p.set('cat', st.cat)
    if (st.from) p.set('from', st.from)
    if (st.to) p.set('to', st.to)
    if (st.near) { p.set('lat', st.near.lat.toFixed(3)); p.set('lon', st.near.lon.toFixed(3)) }
    const qs = p.toString()
    history.replaceState(null, '', qs ? `/?${qs}` : '/')
  }

  async function run(after?: string) {
    const my = ++seq
    if (!after) { syncUrl(); drawFilters(); grid.setAttribute('aria-busy', 'true') }
    const filter: Record<string, unknown> = {}
    if (st.q) filter.text = st.q
    if (st.city) filter.city = st.city
    if (st.cat) filter.categories = [st.cat]
    if (st.from) filter.from = new Date(`${st.from}T00:00:00`).toISOString()
    if (st.to) filter.to = new Date(`${st.to}T23:59:59`).toISOString()
    if (st.near) { filter.near = st.near; filter.radiusKm = 50; if (!st.q) filter.sort = 'DISTANCE' }
    let conn: any
    let fallback = false
    try {
      if (!after && (st.city || st.cat)) {
        const choices = { ...filter, city: undefined, categories: undefined }
        const d = await gql<{ searchEvents: any; choices: any }>(SEARCH_WITH_CHOICES, { filter, after, choices }, { anonymousOk: true })
        conn = { ...d.searchEvents, facets: d.choices.facets }
      } else {
        conn = (await gql<{ searchEvents: any }>(SEARCH, { filter, after }, { anonymousOk: true })).searchEvents
      }
    } catch (e) {
      // Search projection unavailable: the catalog listing (no text/date/geo filters).
      try {
        conn = (await gql<{ events: any }>(LISTING, { after, category: st.cat || undefined, city: st.city || undefined }, { anonymousOk: true })).events
        fallback = true
      } catch {
        if (my === seq && alive) { replace(grid, h('p', { class: 'msg error' }, errorText(e))); grid.removeAttribute('aria-busy') }
        return
      }
    }
    if (my !== seq || !alive) return
    grid.removeAttribute('aria-busy')
    note.hidden = !fallback || !(st.q || st.from || st.to || st.near)
    note.textContent = t('searchFallback')
    if (!after) {
      if (conn.facets) { facets = conn.facets; drawFilters() }
      grid.replaceChildren()
      count.textContent = conn.totalCount === 1 ? t('result1') : t('results', { n: conn.totalCount })
      if (!conn.edges.length) grid.append(h('p', { class: 'empty' }, t('noResults')))
    }
    for (const e of conn.edges) grid.append(card(e.node, e.distanceKm))
    replace(more, conn.pageInfo.hasNextPage ? h('button', { class: 'btn block', id: 'load-more', onclick: () => run(conn.pageInfo.endCursor) }, t('loadMore')) : null)
  }

  drawFilters()
  run()
  document.title = t('appName')
  return () => { alive = false; clearTimeout(debounce) }
}

function card(ev: any, distanceKm?: number | null): HTMLElement {
  const d = dayMonth(ev.startsAt)
  const a = ev.availability
  const few = ev.saleStatus === 'ON_SALE' && a && a.available > 0 && a.available <= Math.max(10, a.capacity * 0.05)
  const avail = ev.saleStatus === 'ON_SALE' && a ? (few ? t('fewLeft', { n: a.available }) : t('left', { n: a.available.toLocaleString() })) : saleText(ev.saleStatus, ev.saleConditions?.saleStartsAt)
  const price = ev.minPrice ? (ev.maxPrice && ev.maxPrice.amount !== ev.minPrice.amount ? t('priceRange', { a: money(ev.minPrice), b: money(ev.maxPrice) }) : money(ev.minPrice)) : ''
  return h('a', { class: 'event-card', href: `/events/${ev.id}`, 'data-event': ev.id },
    h('div', { class: 'date-badge', 'aria-hidden': 'true' }, h('span', { class: 'wd' }, d.weekday), h('strong', null, d.day), h('span', null, d.month)),
    h('div', { class: 'body' },
      h('div', { class: 'chips' }, h('span', { class: 'chip' }, categoryLabel(ev.category)), ev.saleConditions?.queueRequired ? h('span', { class: 'chip warn', title: t('queueEvent') }, icon('clock')) : null),
      h('h2', { class: 'card-title' }, ev.name),
      ev.artists?.length ? h('p', { class: 'card-artists small' }, icon('mic'), t('withArtists', { names: ev.artists.map((a: any) => a.name).join(', ') })) : null,
      h('p', { class: 'muted small' }, `${new Date(ev.startsAt).toLocaleDateString(locale(), { day: 'numeric', month: 'long', year: 'numeric' })} · ${timeOnly(ev.startsAt)} · ${ev.venue.name}, ${ev.venue.city}`, distanceKm != null ? ` · ${t('kmAway', { km: Math.round(distanceKm) })}` : ''),
      h('div', { class: 'card-foot' },
        h('strong', { class: 'price' }, price),
        h('span', { class: `avail sale-${ev.saleStatus}${few ? ' few' : ''}` }, avail)),
    ),
  )
}
