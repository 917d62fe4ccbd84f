import { ApiError, errorText, gql, serverNow, HOLD_FIELDS, MONEY, ORDER_FIELDS, SEATMAP_FIELDS } from '../api'
import * as auth from '../auth'
import { h, replace, toast, uuid } from '../dom'
import { icon } from '../icons'
import { categoryLabel, dateLong, dateTime, money, t, timeOnly, type Money } from '../i18n'
import { navigate, type Page } from '../router'
import { MIN_TAP_PX, PALETTE, SeatMapView, type SectionInfo, type Status } from '../seatmap'
import { load, save } from '../store'
import { ws, type WsStatus } from '../ws'

const EVENT_QUERY = `query Event($id: ID!) {
  event(id: $id) {
    id name description category startsAt endsAt saleStatus cancelledAt
    venue { id name address city country
      sections { id name kind capacity bounds { x y width height } seats { id row number x y } } }
    artists { id name genres }
    saleConditions { saleStartsAt saleEndsAt maxTicketsPerUser holdDurationSeconds queueRequired refundPolicy }
    prices { section { id } price { ${MONEY} } }
    availability { available held sold capacity }
    minPrice { ${MONEY} } maxPrice { ${MONEY} }
    seatMap { ${SEATMAP_FIELDS} }
  }
}`

const SEATMAP_SUB = `subscription SeatMap($eventId: ID!, $after: String) {
  seatMapUpdates(eventId: $eventId, after: $after) {
    eventId cursor
    snapshot { ${SEATMAP_FIELDS} }
    seats { seatId sectionId status version }
    generalAdmission { sectionId available version }
  }
}`

const CREATE_HOLD = `mutation CreateHold($input: CreateHoldInput!) { createHold(input: $input) { ${HOLD_FIELDS} } }`
const CANCEL_HOLD = `mutation CancelHold($id: ID!) { cancelHold(id: $id) { id status } }`
const HOLD_QUERY = `query Hold($id: ID!) { hold(id: $id) { ${HOLD_FIELDS} order { id status } } }`
const CREATE_ORDER = `mutation CreateOrder($input: CreateOrderInput!) { createOrder(input: $input) { ${ORDER_FIELDS} } }`

export interface HoldData {
  id: string
  status: string
  expiresAt: string
  total: Money
  items: { section: { id: string; name: string; kind: string }; seat: { id: string; row: string; number: number } | null; price: Money }[]
  owner?: string | null
}

interface SeatMapUpdate {
  cursor: string
  snapshot?: SeatMapSnap | null
  seats: { seatId: string; status: Status; version: number }[]
  generalAdmission: { sectionId: string; available: number; version: number }[]
}
interface SeatMapSnap {
  cursor: string
  seats: { seatId: string; status: Status; version: number }[]
  generalAdmission: { sectionId: string; available: number; version: number }[]
}

export interface Admission {
  token: string
  expiresAt: string | null
}
export function admissionFor(eventId: string): Admission | null {
  const a = load<Admission>(`tk.admission.${eventId}`, true)
  if (!a) return null
  if (a.expiresAt && Date.parse(a.expiresAt) <= serverNow()) {
    save(`tk.admission.${eventId}`, null, true)
    return null
  }
  return a
}

/** A touch screen as the main pointer (a phone, a tablet): touch wording, tap-to-zoom. */
function touchScreen() {
  return matchMedia('(pointer: coarse)').matches
}

function seatText(row: string, n: number) {
  return t('seatShort', { row, n })
}

export const eventPage: Page = (root, [eventId]) => {
  let alive = true
  const cleanups: (() => void)[] = []
  root.append(h('section', { class: 'page' }, h('p', { class: 'muted' }, t('loading'))))

  gql<{ event: any }>(EVENT_QUERY, { id: eventId }, { anonymousOk: true })
    .then((d) => {
      if (!alive) return
      if (!d.event) throw new ApiError('NOT_FOUND', 'not found')
      mount(d.event)
    })
    .catch((e) => {
      if (!alive) return
      replace(root, h('section', { class: 'page narrow' }, h('h1', null, e.code === 'NOT_FOUND' ? t('notFound') : errorText(e)), h('a', { href: '/', class: 'btn primary' }, t('back'))))
    })

  function mount(ev: any) {
    const sc = ev.saleConditions
    const max: number = sc.maxTicketsPerUser
    const priceOf = new Map<string, Money>(ev.prices.map((p: any) => [p.section.id, p.price]))
    // Colours by price, dearest first.
    const ranked = [...ev.venue.sections].sort((a: any, b: any) => (priceOf.get(b.id)?.amount ?? 0) - (priceOf.get(a.id)?.amount ?? 0))
    const colorOf = new Map<string, string>(ranked.map((sct: any, i: number) => [sct.id, PALETTE[i % PALETTE.length]]))
    const sections: SectionInfo[] = ev.venue.sections.map((sct: any) => ({
      ...sct,
      seats: sct.seats.map((seat: any) => ({ ...seat, sectionId: sct.id })),
      price: priceOf.get(sct.id),
      color: colorOf.get(sct.id)!,
    }))
    const gaSections = sections.filter((x) => x.kind === 'GENERAL_ADMISSION')
    const seatedSections = sections.filter((x) => x.kind === 'SEATED' && x.seats.length > 0)

    // ---- state
    const gaQty = new Map<string, number>()
    let hold: HoldData | null = load<HoldData>(`tk.hold.${ev.id}`, true)
    if (hold && (hold.owner !== auth.userId() || Date.parse(hold.expiresAt) <= serverNow())) hold = null
    let cursor: string = ev.seatMap.cursor
    let busy = false
    // The seats of our own hold request while it is in flight: the live map
    // may report them HELD (by us) before the mutation answers.
    let requested = new Set<string>()
    const onSale = ev.saleStatus === 'ON_SALE'

    const view = new SeatMapView(sections, { onToggle: toggle, onGa: (id) => document.getElementById(`ga-${id}`)?.focus(), onZoomAt: zoomAt })
    const selected = view.selected // the seats picked but not held yet
    for (const st of ev.seatMap.seats) view.apply(st.seatId, st.status, st.version)
    for (const g of ev.seatMap.generalAdmission) view.applyGa(g.sectionId, g.available, g.version)
    if (hold) for (const it of hold.items) if (it.seat) view.mine.add(it.seat.id)
    view.paintAll()

    // ---- live updates: graphql-transport-ws with resume by cursor; SSE as fallback.
    const liveDot = h('span', { class: 'live-dot', id: 'live-status', 'data-status': 'connecting' }, t('connecting'))
    const setLive = (s: WsStatus | 'sse') => {
      const open = s === 'open' || s === 'sse'
      liveDot.dataset.status = open ? 'open' : s
      liveDot.dataset.transport = s === 'sse' ? 'sse' : 'ws'
      liveDot.textContent = open ? t('live') : s === 'reconnecting' ? t('reconnecting') : t('connecting')
    }
    function applyUpdate(u: SeatMapUpdate) {
      if (u.snapshot) {
        for (const st of u.snapshot.seats) {
          const cur = view.status.get(st.seatId)
          // A snapshot replaces the map, but never with something older.
          if (!cur || cur.version <= st.version) { view.status.set(st.seatId, { status: st.status, version: st.version }); view.paint(st.seatId) }
        }
        for (const g of u.snapshot.generalAdmission) view.applyGa(g.sectionId, g.available, g.version)
      }
      for (const st of u.seats ?? []) {
        if (view.apply(st.seatId, st.status, st.version) && st.status !== 'AVAILABLE' && !requested.has(st.seatId)) dropTaken([st.seatId])
      }
      for (const g of u.generalAdmission ?? []) view.applyGa(g.sectionId, g.available, g.version)
      if (u.cursor) cursor = u.cursor
      ;(window as any).__seatmapCursor = cursor
    }
    let sse: EventSource | null = null
    function startSSE() {
      if (sse || !alive) return
      setLive('reconnecting')
      sse = new EventSource(`/api/events/${encodeURIComponent(ev.id)}/seatmap/stream?after=${encodeURIComponent(cursor)}`)
      sse.onopen = () => setLive('sse')
      sse.onmessage = (m) => {
        try { applyUpdate(JSON.parse(m.data)) } catch { /* ignore a bad frame */ }
      }
      sse.addEventListener('resync', () => {
        sse?.close()
        sse = null
        setTimeout(startSSE, 500)
      })
      sse.onerror = () => setLive('reconnecting')
    }
    const unsub = ws.subscribe(SEATMAP_SUB, () => ({ eventId: ev.id, after: cursor }), {
      next: (d) => d?.seatMapUpdates && applyUpdate(d.seatMapUpdates),
      error: () => { stopWsStatus(); startSSE() }, // e.g. the subscription is not served: use the SSE stream
      complete: () => { stopWsStatus(); startSSE() },
    })
    // If the WebSocket cannot be established at all, fall back to SSE after a while.
    let wsTimer = 0
    const stopWsStatus = ws.onStatus((s) => {
      if (sse) return
      setLive(s)
      clearTimeout(wsTimer)
      if (s !== 'open') wsTimer = window.setTimeout(() => { if (ws.status !== 'open') { stopWsStatus(); startSSE() } }, 8000)
    })
    cleanups.push(() => { unsub(); stopWsStatus(); clearTimeout(wsTimer); sse?.close() })

    // ---- seat selection
    function count() {
      let n = selected.size
      for (const q of gaQty.values()) n += q
      return n
    }
    function toggle(id: string) {
      if (hold) return
      if (sc.queueRequired && !admissionFor(ev.id) && onSale) {
        // Picking seats of a queue-protected sale starts in the waiting room.
        ;(window as any).__requireSignIn().then((ok: boolean) => ok && navigate(`/queue/${ev.id}`))
        return
      }
      if (selected.has(id)) selected.delete(id)
      else {
        if (!view.isAvailable(id)) return
        if (!onSale) return
        if (count() >= max) { showMsg(t('tooMany', { n: max }), 'warn'); return }
        selected.add(id)
      }
      view.conflict.delete(id)
      view.paint(id)
      renderPanel()
    }
    /** Someone else took seats we had only selected: drop them and say so. */
    function dropTaken(ids: string[]) {
      const taken = ids.filter((id) => selected.has(id) && !view.isAvailable(id))
      if (!taken.length) return
      for (const id of taken) { selected.delete(id); view.paint(id) }
      toast(t('seatTaken', { seats: describe(taken) }))
      renderPanel()
    }
    function describe(ids: string[]) {
      return ids.map((id) => { const s = view.seat(id); return s ? `${view.section(s.sectionId)?.name}, ${seatText(s.row, s.number)}` : id }).join(', ')
    }

    // ---- layout
    const msg = h('div', { class: 'msg', id: 'event-msg', role: 'alert', hidden: true })
    function showMsg(text: string, kind: 'error' | 'warn' | 'ok' = 'error') {
      msg.textContent = text
      msg.className = `msg ${kind}`
      msg.hidden = !text
    }
    const panel = h('aside', { class: 'panel', id: 'panel', 'aria-label': t('yourSelection') })
    const svgWrap = h('div', { class: 'map-scroll', id: 'map-scroll' }, view.el)
    let zoom = 1
    /** Zoom to z (1 = the whole venue), keeping the point (x, y) of the map's box where it is (default: its centre). */
    function setZoom(z: number, x = svgWrap.clientWidth / 2, y = svgWrap.clientHeight / 2) {
      // Far enough in for a seat to be a comfortable tap target, however big the venue.
      const most = Math.max(4, (1.5 * MIN_TAP_PX * zoom) / Math.max(0.01, view.cellPx()))
      const ratio = Math.max(1, Math.min(most, z)) / zoom
      const px = svgWrap.scrollLeft + x, py = svgWrap.scrollTop + y
      zoom *= ratio
      view.el.style.width = `${zoom * 100}%`
      svgWrap.scrollLeft = px * ratio - x
      svgWrap.scrollTop = py * ratio - y
      svgWrap.dataset.zoom = zoom.toFixed(2)
      zoomOutBtn.disabled = zoom <= 1
    }
    /** A tap on a map drawn too small to pick from: zoom in there until a seat's cell is MIN_TAP_PX. */
    function zoomAt(clientX: number, clientY: number) {
      const r = svgWrap.getBoundingClientRect()
      setZoom((zoom * MIN_TAP_PX * 1.1) / Math.max(0.01, view.cellPx()), clientX - r.left, clientY - r.top)
    }
    const zoomOutBtn = h('button', { class: 'btn ghost small', id: 'zoom-out', 'aria-label': t('zoomOut'), disabled: true, onclick: () => setZoom(zoom / 1.5) }, '−')
    const adm = admissionFor(ev.id)
    const queueBanner = sc.queueRequired
      ? adm
        ? h('div', { class: 'banner ok', id: 'admitted-banner' }, icon('check'), t('admitted', { time: adm.expiresAt ? timeOnly(adm.expiresAt) : '—' }))
        : h('div', { class: 'banner', id: 'queue-banner' }, h('span', null, icon('clock'), t('queueBanner')), h('a', { href: `/queue/${ev.id}`, class: 'btn primary', id: 'enter-queue' }, t('queueEnter')))
      : null

    const saleBadge = h('span', { class: `badge sale-${ev.saleStatus}` }, saleText(ev.saleStatus, sc.saleStartsAt))
    replace(
      root,
      h('section', { class: 'page event' },
        h('a', { href: '/', class: 'back' }, '← ', t('back')),
        ev.cancelledAt ? h('div', { class: 'banner', id: 'event-cancelled', role: 'status' }, icon('alert'), t('eventCancelled')) : null,
        h('header', { class: 'event-head' },
          h('div', { class: 'chips' }, h('span', { class: 'chip' }, categoryLabel(ev.category)), saleBadge, sc.queueRequired ? h('span', { class: 'chip warn' }, t('queueEvent')) : null),
          h('h1', { id: 'event-name' }, ev.name),
          h('p', { class: 'when' }, icon('calendar'), dateLong(ev.startsAt)),
          h('p', { class: 'where' }, icon('pin'), h('strong', null, ev.venue.name), ` · ${ev.venue.address}, ${ev.venue.city}`),
          ev.artists.length ? h('p', { class: 'artists' }, ...ev.artists.map((a: any) => h('span', { class: 'chip artist' }, icon('mic'), a.name))) : null,
          ev.minPrice ? h('p', { class: 'price-range' }, ev.minPrice.amount === ev.maxPrice?.amount ? money(ev.minPrice) : t('priceRange', { a: money(ev.minPrice), b: money(ev.maxPrice) })) : null,
        ),
        queueBanner,
        msg,
        h('div', { class: 'event-layout' },
          h('div', { class: 'card map-card' },
            h('div', { class: 'map-tools' },
              h('h2', null, t('seatMap')),
              liveDot,
              h('div', { class: 'grow' }),
              h('div', { class: 'zoom' },
                zoomOutBtn,
                h('button', { class: 'btn ghost small', id: 'zoom-in', 'aria-label': t('zoomIn'), onclick: () => setZoom(zoom * 1.5) }, '+')),
            ),
            svgWrap,
            h('ul', { class: 'legend', 'aria-label': 'legend' },
              h('li', null, h('i', { class: 'sw avail' }), t('legendAvailable')),
              h('li', null, h('i', { class: 'sw sel' }), t('legendSelected')),
              h('li', null, h('i', { class: 'sw held' }), t('legendHeld')),
              h('li', null, h('i', { class: 'sw sold' }), t('legendSold')),
            ),
            h('p', { class: 'muted small', id: 'seatmap-help' }, touchScreen() ? t('seatMapHelpTouch') : t('seatMapHelp')),
            h('ul', { class: 'price-list' }, ...ranked.map((sct: any) => h('li', null, h('i', { class: 'sw', style: `background:${colorOf.get(sct.id)}` }), h('span', null, sct.name), h('strong', null, money(priceOf.get(sct.id)))))),
          ),
          panel,
        ),
        h('div', { class: 'card about' },
          h('h2', null, t('aboutEvent')),
          h('p', null, ev.description),
          h('ul', { class: 'facts' },
            h('li', null, t('maxPerUser', { n: max })),
            h('li', null, t('holdMinutes', { n: Math.round(sc.holdDurationSeconds / 60) })),
            sc.refundPolicy ? h('li', null, `${t('refundPolicy')}: ${sc.refundPolicy}`) : null,
          ),
        ),
      ),
    )
    document.title = `${ev.name} · ${t('appName')}`

    // ---- panel: selection or hold
    let tick = 0
    cleanups.push(() => clearInterval(tick))

    function renderPanel() {
      clearInterval(tick)
      if (hold) return renderHold(hold)
      const items: HTMLElement[] = []
      let total = 0
      let currency = ''
      for (const id of selected) {
        const seat = view.seat(id)!
        const sec = view.section(seat.sectionId)!
        total += sec.price?.amount ?? 0
        currency = sec.price?.currency ?? currency
        items.push(h('li', null,
          h('i', { class: 'sw', style: `background:${sec.color}` }),
          h('span', null, `${sec.name} · ${seatText(seat.row, seat.number)}`),
          h('strong', null, money(sec.price)),
          h('button', { class: 'x', 'aria-label': `${t('remove')} ${seatText(seat.row, seat.number)}`, onclick: () => toggle(id) }, '×'),
        ))
      }
      for (const [sid, q] of gaQty) {
        if (!q) continue
        const sec = view.section(sid)!
        total += (sec.price?.amount ?? 0) * q
        currency = sec.price?.currency ?? currency
        items.push(h('li', null, h('i', { class: 'sw', style: `background:${sec.color}` }), h('span', null, `${sec.name} × ${q}`), h('strong', null, money(sec.price ? { amount: sec.price.amount * q, currency: sec.price.currency } : null))))
      }
      const n = count()
      const qty = h('select', { id: 'best-qty', 'aria-label': t('bestQty') }, ...Array.from({ length: max }, (_, i) => h('option', { value: i + 1, selected: i === 1 }, String(i + 1))))
      const secSel = h('select', { id: 'best-section', 'aria-label': t('bestSection') },
        h('option', { value: '' }, t('anySection')),
        ...seatedSections.map((x) => h('option', { value: x.id }, `${x.name} · ${money(x.price)}`)))
      const disabled = !onSale || busy
      replace(
        panel,
        h('h2', null, t('yourSelection')),
        items.length ? h('ul', { class: 'sel-list', id: 'selection' }, ...items) : h('p', { class: 'muted' }, onSale ? (touchScreen() ? t('nothingSelectedTouch') : t('nothingSelected')) : saleText(ev.saleStatus, sc.saleStartsAt)),
        // The total and the hold button: a bar fixed at the bottom of a phone's screen.
        h('div', { class: 'actions', id: 'action-bar' },
          items.length ? h('p', { class: 'total' }, h('span', null, t('total')), h('strong', { id: 'sel-total' }, money({ amount: total, currency }))) : null,
          h('button', {
            class: 'btn primary block', id: 'hold-btn', disabled: disabled || n === 0,
            onclick: () => doHold({ seatIds: [...selected], generalAdmission: [...gaQty].filter(([, q]) => q > 0).map(([sectionId, quantity]) => ({ sectionId, quantity })) }),
          }, busy ? t('holding') : n === 0 ? t('pickSeats') : n === 1 ? t('holdSeats1') : t('holdSeats', { n }))),
        seatedSections.length
          ? h('div', { class: 'best' },
              h('h3', null, t('bestTitle')),
              h('div', { class: 'row' }, qty, secSel),
              h('button', {
                class: 'btn block', id: 'best-btn', disabled,
                onclick: () => doHold({ bestAvailable: { quantity: Number(qty.value), sectionId: secSel.value || undefined, adjacent: true } }),
              }, icon('spark'), t('bestGo')))
          : null,
        gaSections.length
          ? h('div', { class: 'ga' },
              h('h3', null, t('gaTitle')),
              ...gaSections.map((x) => {
                const q = gaQty.get(x.id) ?? 0
                const avail = view.ga.get(x.id)?.available ?? x.capacity
                const set = (v: number) => {
                  v = Math.max(0, Math.min(v, avail))
                  if (v > q && count() + (v - q) > max) { showMsg(t('tooMany', { n: max }), 'warn'); return }
                  gaQty.set(x.id, v)
                  renderPanel()
                  document.getElementById(`ga-${x.id}`)?.focus()
                }
                return h('div', { class: 'ga-row' },
                  h('i', { class: 'sw', style: `background:${x.color}` }),
                  h('span', { class: 'grow' }, x.name, h('br'), h('small', { class: 'muted' }, `${money(x.price)} · ${t('gaAvailable', { n: avail })}`)),
                  h('div', { class: 'stepper' },
                    h('button', { class: 'btn ghost small', 'aria-label': `− ${x.name}`, disabled: disabled || q === 0, onclick: () => set(q - 1) }, '−'),
                    h('output', { id: `ga-${x.id}`, tabindex: 0, 'aria-label': `${x.name}: ${q}`, 'aria-live': 'polite' }, String(q)),
                    h('button', { class: 'btn ghost small', 'aria-label': `+ ${x.name}`, disabled: disabled || avail <= q, onclick: () => set(q + 1) }, '+'),
                  ))
              }))
          : null,
      )
    }

    function renderHold(hd: HoldData) {
      const clock = h('strong', { class: 'countdown', id: 'countdown', 'aria-live': 'off' })
      const bar = h('div', { class: 'bar-fill' })
      const started = Date.parse(hd.expiresAt) - sc.holdDurationSeconds * 1000
      const update = () => {
        const left = Math.max(0, Date.parse(hd.expiresAt) - serverNow())
        const s = Math.min(sc.holdDurationSeconds, Math.floor(left / 1000))
        clock.textContent = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`
        clock.classList.toggle('urgent', s <= 60)
        bar.style.width = `${Math.min(100, (left / Math.max(1, Date.parse(hd.expiresAt) - started)) * 100)}%`
        if (left <= 0) expireHold()
      }
      replace(
        panel,
        h('div', { class: 'hold', id: 'hold-panel', 'data-hold-id': hd.id },
          h('h2', null, icon('ticket'), t('holdTitle')),
          h('ul', { class: 'sel-list' }, ...hd.items.map((it) => h('li', null,
            h('i', { class: 'sw', style: `background:${colorOf.get(it.section.id) ?? '#16a34a'}` }),
            h('span', null, it.seat ? `${it.section.name} · ${seatText(it.seat.row, it.seat.number)}` : `${it.section.name} · ${t('generalAdmission')}`),
            h('strong', null, money(it.price))))),
          h('p', { class: 'total' }, h('span', null, t('total')), h('strong', null, money(hd.total))),
          // The countdown and the pay button: a bar fixed at the bottom of a phone's screen.
          h('div', { class: 'actions', id: 'action-bar' },
            h('div', { class: 'clock-box' },
              h('p', { class: 'muted' }, t('holdExpiresIn')),
              clock,
              h('div', { class: 'bar-track', 'aria-hidden': 'true' }, bar)),
            h('button', { class: 'btn primary block', id: 'checkout-btn', disabled: busy, onclick: () => checkout(hd) }, busy ? t('goingToPay') : t('checkout', { total: money(hd.total) }))),
          h('button', { class: 'btn ghost block', id: 'cancel-hold', disabled: busy, onclick: () => cancel(hd) }, t('cancelHold')),
        ),
      )
      update()
      tick = window.setInterval(update, 250)
    }

    function setHold(hd: HoldData | null) {
      for (const id of view.mine) view.paint(id)
      const prev = [...view.mine]
      view.mine.clear()
      hold = hd
      if (hd) {
        hd.owner = auth.userId()
        for (const it of hd.items) if (it.seat) { view.mine.add(it.seat.id); view.assume(it.seat.id, 'HELD') }
      }
      for (const id of prev) view.paint(id)
      save(`tk.hold.${ev.id}`, hd, true)
      renderPanel()
    }

    function expireHold() {
      if (!hold) return
      const ids = hold.items.flatMap((it) => (it.seat ? [it.seat.id] : []))
      setHold(null)
      for (const id of ids) if (view.status.get(id)?.status === 'HELD') view.assume(id, 'AVAILABLE')
      showMsg(t('holdExpired'), 'warn')
    }

    async function doHold(input: Record<string, unknown>) {
      if (busy || hold) return
      showMsg('')
      if (!(await (window as any).__requireSignIn())) return
      let admission = admissionFor(ev.id)
      if (sc.queueRequired && !admission) {
        navigate(`/queue/${ev.id}`)
        return
      }
      busy = true
      requested = new Set((input.seatIds as string[] | undefined) ?? [])
      renderPanel()
      const key = uuid()
      const vars = { input: { ...input, eventId: ev.id, idempotencyKey: key, admissionToken: admission?.token } }
      try {
        let d: { createHold: HoldData }
        try {
          d = await gql(CREATE_HOLD, vars)
        } catch (e) {
          if (e instanceof ApiError && e.code === 'NETWORK') d = await gql(CREATE_HOLD, vars) // same key: safe to retry
          else throw e
        }
        busy = false
        requested = new Set()
        for (const id of selected) { selected.delete(id); view.paint(id) }
        gaQty.clear()
        view.flashConflict([])
        setHold(d.createHold)
      } catch (e) {
        busy = false
        const mayBeTaken = [...requested]
        requested = new Set()
        const err = e as ApiError
        if (err.code === 'SEAT_UNAVAILABLE') {
          const ids: string[] = err.ext?.unavailableSeatIds ?? []
          for (const id of ids) { selected.delete(id); view.assume(id, 'HELD') }
          view.flashConflict(ids)
          const known = ids.filter((id) => view.seat(id))
          showMsg(known.length ? t('seatTaken', { seats: describe(known) }) : t('seatTakenGeneric'))
          if (known[0]) view.focus(known[0])
        } else if (err.code === 'QUEUE_ADMISSION_REQUIRED') {
          save(`tk.admission.${ev.id}`, null, true)
          navigate(`/queue/${ev.id}`)
          return
        } else if (err.code === 'UNAUTHENTICATED') {
          showMsg(t('sessionExpired'))
        } else showMsg(errorText(err))
        // Seats the live map reported taken while the request was in flight.
        if (err.code !== 'SEAT_UNAVAILABLE') dropTaken(mayBeTaken)
        renderPanel()
      }
    }

    async function cancel(hd: HoldData) {
      busy = true
      renderPanel()
      try {
        await gql(CANCEL_HOLD, { id: hd.id })
        const ids = hd.items.flatMap((it) => (it.seat ? [it.seat.id] : []))
        busy = false
        setHold(null)
        for (const id of ids) view.assume(id, 'AVAILABLE')
        showMsg(t('holdCancelled'), 'ok')
      } catch (e) {
        busy = false
        if (e instanceof ApiError && e.code === 'HOLD_EXPIRED') expireHold()
        else { showMsg(errorText(e)); renderPanel() }
      }
    }

    async function checkout(hd: HoldData) {
      busy = true
      renderPanel()
      // One key per hold, kept across reloads: a second click or a retry after
      // a lost answer finds the same order.
      const keyName = `tk.orderKey.${hd.id}`
      let key = load<string>(keyName, true)
      if (!key) { key = uuid(); save(keyName, key, true) }
      try {
        const d = await gql<{ createOrder: any }>(CREATE_ORDER, { input: { holdId: hd.id, idempotencyKey: key } })
        goToPayment(d.createOrder)
      } catch (e) {
        busy = false
        const err = e as ApiError
        if (err.code === 'HOLD_ALREADY_ORDERED' && err.ext?.orderId) { navigate(`/orders/${err.ext.orderId}`); return }
        if (err.code === 'HOLD_EXPIRED') { expireHold(); return }
        showMsg(errorText(err))
        renderPanel()
      }
    }

    // On reload: ask the server how the stored hold stands.
    if (hold) {
      gql<{ hold: any }>(HOLD_QUERY, { id: hold.id })
        .then((d) => {
          if (!alive || !d.hold) return
          if (d.hold.order?.id && d.hold.status !== 'ACTIVE') { setHold(null); return }
          if (d.hold.status === 'ACTIVE') setHold({ ...d.hold })
          else expireHold()
        })
        .catch(() => { /* Query.hold not available: keep the stored copy until its expiresAt */ })
    }
    renderPanel()
  }

  return () => {
    alive = false
    cleanups.forEach((f) => f())
  }
}

export function goToPayment(order: any) {
  save('tk.lastOrder', order.id)
  const pay = [...(order.payments ?? [])].reverse().find((p: any) => p.checkoutUrl && (p.status === 'PENDING' || p.status === 'UNKNOWN'))
  if (order.status === 'AWAITING_PAYMENT' && pay?.checkoutUrl) {
    history.replaceState(null, '', `/orders/${order.id}`) // Back from the provider lands on the order
    location.assign(pay.checkoutUrl)
  } else navigate(`/orders/${order.id}`)
}

export function saleText(status: string, saleStartsAt?: string) {
  switch (status) {
    case 'ON_SALE': return t('onSale')
    case 'SOLD_OUT': return t('soldOut')
    case 'NOT_ON_SALE_YET': return saleStartsAt ? t('saleOpens', { date: dateTime(saleStartsAt) }) : t('notYet')
    case 'ENDED': return t('ended')
    default: return status
  }
}
