import { errorText, gql, QUEUE_FIELDS } from '../api'
import * as auth from '../auth'
import { h, replace } from '../dom'
import { icon } from '../icons'
import { dateLong, t } from '../i18n'
import { navigate, type Page } from '../router'
import { save } from '../store'
import { ws } from '../ws'

const JOIN = `mutation Join($eventId: ID!) { joinQueue(eventId: $eventId) { ${QUEUE_FIELDS} } }`
const TICKET = `query Ticket($eventId: ID!) { queueTicket(eventId: $eventId) { ${QUEUE_FIELDS} } event(id: $eventId) { id name startsAt venue { name city } } }`
const POLL = `query Poll($eventId: ID!) { queueTicket(eventId: $eventId) { ${QUEUE_FIELDS} } }`
const LEAVE = `mutation Leave($eventId: ID!) { leaveQueue(eventId: $eventId) }`
const SUB = `subscription Q($eventId: ID!) { queueUpdates(eventId: $eventId) { ${QUEUE_FIELDS} } }`

export const queuePage: Page = (root, [eventId]) => {
  let alive = true
  let timer = 0
  let unsub: (() => void) | null = null
  let subOk = false
  let ev: any = null
  let firstPosition = 0
  const box = h('div', { class: 'queue-box', id: 'queue', 'aria-live': 'polite' }, h('p', null, t('queueJoining')))
  const title = h('p', { class: 'muted' })
  root.append(h('section', { class: 'page narrow queue' },
    h('a', { href: `/events/${eventId}`, class: 'back' }, '← ', t('back')),
    h('h1', null, icon('clock'), t('queueTitle')), title, box))

  const start = async () => {
    if (!(await (window as any).__requireSignIn())) { navigate(`/events/${eventId}`, { replace: true }); return }
    try {
      const info = await gql<{ queueTicket: any; event: any }>(TICKET, { eventId })
      ev = info.event
      if (ev) title.textContent = `${ev.name} · ${dateLong(ev.startsAt)} · ${ev.venue.name}`
      let tk = info.queueTicket
      if (!tk || tk.status === 'EXPIRED') tk = (await gql<{ joinQueue: any }>(JOIN, { eventId })).joinQueue
      show(tk)
      unsub = ws.subscribe(SUB, () => ({ eventId }), {
        next: (d) => { subOk = true; show(d?.queueUpdates) },
        error: () => { subOk = false; unsub = null },
      })
      poll()
    } catch (e) {
      if (alive) replace(box, h('p', { class: 'msg error' }, errorText(e)))
    }
  }
  // Polling is the fallback for a stream that does not work: while
  // queueUpdates delivers, a safety read once a minute; without it, every
  // half of the estimated wait, between 2 and 15 s (thousands of fans wait
  // at once: a fixed fast poll would cost more than the queue itself).
  let eta: number | null = null
  const poll = () => {
    clearTimeout(timer)
    if (!alive) return
    const every = subOk && ws.status === 'open' ? 60000 : Math.min(Math.max((eta ?? 4) * 500, 2000), 15000)
    timer = window.setTimeout(() => {
      gql<{ queueTicket: any }>(POLL, { eventId }).then((d) => show(d.queueTicket)).catch(() => {}).finally(poll)
    }, every)
  }

  function show(tk: any) {
    if (!alive || !tk) return
    if (tk.status === 'ADMITTED' && tk.admissionToken) {
      save(`tk.admission.${eventId}`, { token: tk.admissionToken, expiresAt: tk.admissionExpiresAt }, true)
      replace(box, h('div', { class: 'admitted', id: 'queue-admitted' }, h('p', { class: 'big' }, icon('party')), h('p', null, t('queueAdmitted'))))
      clearTimeout(timer)
      setTimeout(() => alive && navigate(`/events/${eventId}`, { replace: true }), 900)
      return
    }
    if (tk.status === 'EXPIRED') {
      replace(box, h('p', null, t('queueExpired')), h('button', { class: 'btn primary', onclick: () => gql<{ joinQueue: any }>(JOIN, { eventId }).then((d) => show(d.joinQueue)) }, t('queueRejoin')))
      return
    }
    eta = tk.estimatedWaitSeconds ?? null
    const pos = tk.position ?? 0
    firstPosition = Math.max(firstPosition, pos)
    const etaText = eta == null ? t('queueEtaUnknown') : eta < 60 ? t('queueEtaSoon') : t('queueEtaMin', { n: Math.round(eta / 60) })
    const progress = firstPosition > 0 ? Math.max(3, 100 - (pos / firstPosition) * 100) : 3
    replace(box,
      h('p', { class: 'muted' }, t('queueWaiting')),
      h('div', { class: 'queue-stats' },
        h('div', null, h('span', { class: 'muted small' }, t('queuePosition')), h('strong', { id: 'queue-position', 'data-status': tk.status }, pos ? pos.toLocaleString() : '—')),
        h('div', null, h('span', { class: 'muted small' }, t('queueEta')), h('strong', { id: 'queue-eta' }, etaText))),
      h('div', { class: 'bar-track', 'aria-hidden': 'true' }, h('div', { class: 'bar-fill', style: `width:${progress}%` })),
      h('p', { class: 'small' }, t('queueKeepOpen')),
      h('button', { class: 'btn ghost', onclick: () => gql(LEAVE, { eventId }).finally(() => navigate(`/events/${eventId}`)) }, t('queueLeave')),
    )
  }

  if (auth.token()) start()
  else setTimeout(start, 0)
  return () => {
    alive = false
    clearTimeout(timer)
    unsub?.()
  }
}
