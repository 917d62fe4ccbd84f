import { ApiError, errorText, gql, ORDER_FIELDS, MONEY } from '../api'
import * as auth from '../auth'
import { h, replace, uuid } from '../dom'
import { icon } from '../icons'
import { dateLong, dateShort, money, t, timeOnly, type Key } from '../i18n'
import { type Page } from '../router'
import { load, save } from '../store'
import { ws } from '../ws'
import { goToPayment } from './event'

const ORDER_QUERY = `query Order($id: ID!) { order(id: $id) { ${ORDER_FIELDS} } }`
const ORDER_SUB = `subscription OrderUpdates($orderId: ID!) { orderUpdates(orderId: $orderId) { ${ORDER_FIELDS} } }`
const REFUND = `mutation Refund($orderId: ID!, $key: String!) { requestRefund(orderId: $orderId, idempotencyKey: $key) { ${ORDER_FIELDS} } }`
const RETRY = `mutation Retry($orderId: ID!, $key: String!) { retryPayment(orderId: $orderId, idempotencyKey: $key) { ${ORDER_FIELDS} } }`
const MY_ORDERS = `query MyOrders($after: String) { myOrders(first: 20, after: $after) {
  edges { node { id status createdAt total { ${MONEY} } event { id name startsAt venue { name city } } tickets { id } hold { items { seat { id } } } } }
  pageInfo { hasNextPage endCursor } } }`

const FINAL = new Set(['EXPIRED', 'CANCELLED', 'REFUNDED'])

function signInFirst(root: HTMLElement, again: () => void) {
  replace(root, h('section', { class: 'page narrow' },
    h('h1', null, t('signInTitle')),
    h('button', { class: 'btn primary', onclick: () => (window as any).__requireSignIn().then((ok: boolean) => ok && again()) }, t('signIn'))))
}

// The QR library is loaded only when there are tickets to show.
let qrLib: Promise<any> | null = null
function qr(code: string): HTMLElement {
  const div = h('div', { class: 'qr', role: 'img', 'aria-label': `QR ${code.slice(0, 12)}…` })
  qrLib ??= import('qrcode-generator')
  qrLib.then((m: any) => {
    const qrcode = (m.default ?? m) as typeof import('qrcode-generator')
    const q = qrcode(0, 'M')
    q.addData(code)
    q.make()
    div.innerHTML = q.createSvgTag({ cellSize: 4, margin: 2, scalable: true })
  })
  return div
}

export const orderPage: Page = (root, [orderId], query) => {
  let alive = true
  let timer = 0
  let unsub: (() => void) | null = null
  let subOk = false
  let order: any = null
  const returned = query.has('payment_id') || query.has('returned')
  if (!auth.token()) {
    signInFirst(root, () => location.reload())
    return
  }
  save('tk.lastOrder', orderId)
  root.append(h('section', { class: 'page narrow' }, h('p', { class: 'muted' }, t('loading'))))

  const show = (o: any) => {
    if (!alive || !o) return
    // Never go back to an older state (a late poll answer after a push).
    if (order && Date.parse(o.updatedAt) < Date.parse(order.updatedAt)) return
    order = o
    render()
    if (FINAL.has(o.status)) { clearTimeout(timer); unsub?.(); unsub = null }
  }

  // Polling fallback: fast while the subscription is not confirmed to work, slow otherwise.
  const poll = () => {
    clearTimeout(timer)
    if (!alive || (order && FINAL.has(order.status))) return
    gql<{ order: any }>(ORDER_QUERY, { id: orderId })
      .then((d) => show(d.order))
      .catch((e) => { if (!order) fail(e) })
      .finally(() => {
        if (alive) timer = window.setTimeout(poll, subOk && ws.status === 'open' ? 15000 : 2500)
      })
  }
  const fail = (e: ApiError) => {
    replace(root, h('section', { class: 'page narrow' }, h('h1', null, e.code === 'NOT_FOUND' || e.code === 'FORBIDDEN' ? t('notFound') : errorText(e)), h('a', { class: 'btn primary', href: '/orders' }, t('myOrders'))))
  }
  unsub = ws.subscribe(ORDER_SUB, () => ({ orderId }), {
    next: (d) => { subOk = true; show(d?.orderUpdates) },
    error: () => { subOk = false; unsub = null },
  })
  const onVisible = () => { if (document.visibilityState === 'visible') poll() }
  document.addEventListener('visibilitychange', onVisible)
  window.addEventListener('online', poll)
  poll()

  function render() {
    const o = order
    const st: string = o.status
    const pay = [...o.payments].reverse().find((p: any) => p.checkoutUrl && p.status === 'PENDING')
    const hasOpen = o.payments.some((p: any) => p.status === 'PENDING' || p.status === 'UNKNOWN')
    const ic = ({ CONFIRMED: 'check', AWAITING_PAYMENT: 'clock', PAYMENT_FAILED: 'alert', EXPIRED: 'clock', CANCELLED: 'x', REFUNDED: 'x' } as const)[st as 'CONFIRMED'] ?? 'ticket'
    const deadline: string | null = o.event.saleConditions?.refundDeadline ?? null
    const refundable = st === 'CONFIRMED' && deadline !== null && Date.parse(deadline) > Date.now()
    replace(root, h('section', { class: 'page narrow order' },
      h('a', { href: '/orders', class: 'back' }, '← ', t('myOrders')),
      h('div', { class: `status-card st-${st}`, id: 'order-status', 'data-status': st },
        h('div', { class: 'status-icon' }, icon(ic)),
        h('div', null,
          h('p', { class: 'muted small' }, `${t('orderTitle')} ${o.id.slice(0, 8)}`),
          h('h1', null, t(`orderStatus_${st}` as Key)),
          h('p', null, returned && st === 'AWAITING_PAYMENT' ? t('returnedVerifying') : t(`orderMsg_${st}` as Key)),
        ),
        st === 'AWAITING_PAYMENT' ? h('div', { class: 'spinner', 'aria-hidden': 'true' }) : null,
      ),
      (st === 'AWAITING_PAYMENT' || st === 'PAYMENT_FAILED') && o.hold.status === 'ACTIVE'
        ? h('p', { class: 'muted small hold-until' }, t('holdUntil', { time: timeOnly(o.hold.expiresAt) }))
        : null,
      st === 'AWAITING_PAYMENT' && pay
        ? h('a', { class: 'btn primary block', id: 'pay-link', href: pay.checkoutUrl, onclick: () => save('tk.lastOrder', o.id) }, t('payNow'))
        : null,
      st === 'PAYMENT_FAILED' && !hasOpen
        ? h('button', { class: 'btn primary block', id: 'retry-pay', onclick: retry }, t('retryPay'))
        : null,
      o.event.cancelledAt ? h('p', { class: 'msg error', id: 'event-cancelled' }, t('eventCancelled')) : null,
      refundable
        ? h('div', { class: 'refund' },
            h('p', { class: 'muted small' }, t('refundUntil', { time: dateShort(deadline!) })),
            h('button', { class: 'btn block', id: 'request-refund', onclick: refund }, t('requestRefund')))
        : null,
      h('div', { class: 'card' },
        h('h2', null, h('a', { href: `/events/${o.event.id}` }, o.event.name)),
        h('p', { class: 'muted' }, `${dateLong(o.event.startsAt)} · ${o.event.venue.name}, ${o.event.venue.city}`),
        h('ul', { class: 'sel-list' }, ...o.hold.items.map((it: any) => h('li', null,
          h('span', null, it.seat ? `${it.section.name} · ${t('seatShort', { row: it.seat.row, n: it.seat.number })}` : `${it.section.name} · ${t('generalAdmission')}`),
          h('strong', null, money(it.price))))),
        h('p', { class: 'total' }, h('span', null, t('total')), h('strong', null, money(o.total))),
      ),
      o.tickets.length
        ? h('div', { class: 'tickets', id: 'tickets' },
            h('h2', null, t('tickets')),
            ...o.tickets.map((tk: any) => h('article', { class: `ticket ticket-${tk.status}`, 'data-ticket': tk.id, 'data-status': tk.status },
              tk.status === 'VOID' ? h('span', { class: 'badge order-REFUNDED' }, t('ticketVoid')) : qr(tk.code),
              tk.status === 'USED' ? h('span', { class: 'badge' }, t('ticketUsed')) : null,
              h('div', null,
                h('p', { class: 'muted small' }, t('ticketFor')),
                h('h3', null, o.event.name),
                h('p', null, tk.seat ? `${tk.section.name} · ${t('seatShort', { row: tk.seat.row, n: tk.seat.number })}` : `${tk.section.name} · ${t('generalAdmission')}`),
                h('p', { class: 'muted small' }, dateShort(o.event.startsAt)),
                h('code', { class: 'code' }, `${tk.code.slice(0, 24)}…`)))))
        : null,
      o.payments.length
        ? h('details', { class: 'payments' }, h('summary', null, t('payments')),
            h('ul', null, ...o.payments.map((p: any) => h('li', null, `${dateShort(p.createdAt)} · ${money(p.amount)} · ${t(`paymentStatus_${p.status}` as Key)}`))))
        : null,
    ))
    document.title = `${t(`orderStatus_${st}` as Key)} · ${t('appName')}`
  }

  async function refund() {
    if (!confirm(t('refundConfirm'))) return
    const keyName = `tk.refundKey.${orderId}`
    let key = load<string>(keyName, true)
    if (!key) { key = uuid(); save(keyName, key, true) }
    try {
      const d = await gql<{ requestRefund: any }>(REFUND, { orderId, key })
      order = d.requestRefund
      render()
    } catch (e) {
      alert(errorText(e))
    }
  }

  async function retry() {
    const keyName = `tk.retryKey.${orderId}.${order.payments.length}`
    let key = load<string>(keyName, true)
    if (!key) { key = uuid(); save(keyName, key, true) }
    try {
      const d = await gql<{ retryPayment: any }>(RETRY, { orderId, key })
      goToPayment(d.retryPayment)
    } catch (e) {
      alert(errorText(e))
    }
  }

  return () => {
    alive = false
    clearTimeout(timer)
    unsub?.()
    document.removeEventListener('visibilitychange', onVisible)
    window.removeEventListener('online', poll)
  }
}

export const ordersPage: Page = (root) => {
  let alive = true
  if (!auth.token()) {
    signInFirst(root, () => location.reload())
    return
  }
  const list = h('div', { class: 'order-list', id: 'orders' }, h('p', { class: 'muted' }, t('loading')))
  root.append(h('section', { class: 'page narrow' }, h('h1', null, t('myOrders')), list))
  const load = (after?: string) =>
    gql<{ myOrders: any }>(MY_ORDERS, { after })
      .then((d) => {
        if (!alive) return
        if (!after) list.replaceChildren()
        const edges = d.myOrders.edges
        if (!edges.length && !after) list.append(h('p', { class: 'muted' }, t('noOrders')))
        for (const { node: o } of edges) {
          const n = o.tickets.length || o.hold.items.length
          list.append(h('a', { class: 'order-row card', href: `/orders/${o.id}` },
            h('div', { class: 'grow' },
              h('strong', null, o.event.name),
              h('p', { class: 'muted small' }, `${dateShort(o.event.startsAt)} · ${o.event.venue.name}, ${o.event.venue.city}`),
              h('p', { class: 'small' }, n === 1 ? t('nTickets1') : t('nTickets', { n }), ' · ', money(o.total))),
            h('span', { class: `badge order-${o.status}` }, t(`orderStatus_${o.status}` as Key))))
        }
        if (d.myOrders.pageInfo.hasNextPage) {
          const more: HTMLButtonElement = h('button', { class: 'btn block', onclick: () => { more.remove(); load(d.myOrders.pageInfo.endCursor) } }, t('loadMore'))
          list.append(more)
        }
      })
      .catch((e) => alive && replace(list, h('p', { class: 'msg error' }, errorText(e))))
  load()
  return () => { alive = false }
}
