// The door staff's page: pick an event, scan a ticket's QR code with the
// camera (BarcodeDetector, where the browser has it) or type/paste the
// code; checkIn admits it once. The answer is shown big, as text and not
// only as colour, with a running count.
import { errorText, gql } from '../api'
import * as auth from '../auth'
import { h, replace } from '../dom'
import { dateShort, t, type Key } from '../i18n'
import { render, type Page } from '../router'
import { load, save } from '../store'

const EVENTS = `query DoorEvents { searchEvents(first: 50) { edges { node { id name startsAt } } } }`
const EVENT = `query DoorEvent($id: ID!) { event(id: $id) { id name startsAt } }`
const CHECK_IN = `mutation CheckIn($eventId: ID!, $code: String!) { checkIn(eventId: $eventId, code: $code) { admitted reason ticket { id status } } }`

type Outcome = 'ADMITTED' | 'ALREADY_USED' | 'VOID' | 'OTHER_EVENT' | 'INVALID_CODE'

export const doorPage: Page = (root, _params, query) => {
  let alive = true
  let stopCamera = () => {}
  const page = h('section', { class: 'page narrow door' }, h('h1', null, t('doorTitle')))
  root.append(page)
  if (!auth.isStaff()) {
    const err = h('p', { class: 'error', role: 'alert' })
    page.append(h('p', { class: 'muted', id: 'door-staff-only' }, t('doorStaffOnly')), err)
    auth.devSignInEnabled().then((dev) => {
      if (!dev || !alive) return
      const name = h('input', { id: 'door-staff-name', autocomplete: 'nickname', required: true, maxlength: 40, value: auth.userName() ?? '' })
      page.append(h('form', {
        class: 'stack',
        onsubmit: async (e: Event) => {
          e.preventDefault()
          try {
            await auth.devSignIn(name.value, 'staff')
            render()
          } catch (ex) {
            err.textContent = (ex as Error).message
          }
        },
      }, h('label', { for: 'door-staff-name' }, t('signInName')), name,
        h('button', { type: 'submit', class: 'btn primary', id: 'door-staff-signin' }, t('doorSignInStaff'))))
    })
    return () => { alive = false }
  }

  const counts = load<{ admitted: number; total: number }>('tk.door.counts') ?? { admitted: 0, total: 0 }
  const select = h('select', { id: 'door-event', required: true }, h('option', { value: '' }, t('doorPick')))
  const code = h('textarea', { id: 'door-code', rows: 3, autocomplete: 'off', spellcheck: false, 'aria-describedby': 'door-code-help' })
  const result = h('div', { class: 'door-result', id: 'door-result', role: 'status', 'aria-live': 'assertive' })
  const count = h('p', { class: 'door-count', id: 'door-count' })
  const showCount = () => { count.textContent = t('doorCount', { admitted: counts.admitted, total: counts.total }) }
  const video = h('video', { class: 'door-video', muted: true, playsinline: true, hidden: true, 'aria-hidden': 'true' })
  const camBtn = h('button', { type: 'button', class: 'btn', id: 'door-scan' }, t('doorScan'))
  let busy = false

  const check = async (value: string) => {
    const eventId = select.value
    value = value.trim()
    if (!eventId || !value || busy) return
    busy = true
    try {
      const r = (await gql<{ checkIn: { admitted: boolean; reason: string | null } }>(CHECK_IN, { eventId, code: value })).checkIn
      const o = (r.admitted ? 'ADMITTED' : r.reason ?? 'INVALID_CODE') as Outcome
      counts.total++
      if (r.admitted) counts.admitted++
      save('tk.door.counts', counts)
      showCount()
      replace(result,
        h('p', { class: 'door-outcome', 'data-outcome': o }, r.admitted ? '✓ ' : '✗ ', t(`door_${o}` as Key)),
        h('p', { class: 'door-hint' }, t(`doorHint_${o}` as Key)))
      result.setAttribute('data-outcome', o)
      code.value = ''
    } catch (e) {
      replace(result, h('p', { class: 'msg error' }, errorText(e)))
      result.removeAttribute('data-outcome')
    } finally {
      busy = false
    }
  }

  const BD = (window as any).BarcodeDetector
  camBtn.addEventListener('click', async () => {
    if (!BD) return
    if (!video.hidden) { stopCamera(); return }
    try {
      const stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' } })
      const detector = new BD({ formats: ['qr_code'] })
      video.srcObject = stream
      video.hidden = false
      await video.play()
      camBtn.textContent = t('doorScanStop')
      let timer = 0
      let last = ''
      const tick = async () => {
        if (video.hidden) return
        try {
          const found = await detector.detect(video)
          const raw: string | undefined = found[0]?.rawValue
          if (raw && raw !== last) { last = raw; await check(raw) }
        } catch { /* a frame that cannot be read */ }
        timer = window.setTimeout(tick, 300)
      }
      stopCamera = () => {
        clearTimeout(timer)
        stream.getTracks().forEach((tr) => tr.stop())
        video.hidden = true
        video.srcObject = null
        camBtn.textContent = t('doorScan')
        stopCamera = () => {}
      }
      tick()
    } catch (e) {
      replace(result, h('p', { class: 'msg error' }, errorText(e)))
    }
  })

  page.append(
    h('form', {
      class: 'stack', id: 'door-form',
      onsubmit: (e: Event) => { e.preventDefault(); check(code.value) },
    },
      h('label', { for: 'door-event' }, t('doorEvent')), select,
      h('label', { for: 'door-code' }, t('doorCode')), code,
      h('p', { class: 'muted small', id: 'door-code-help' }, BD ? t('doorCodeHelp') : t('doorNoCamera')),
      h('div', { class: 'row' }, h('button', { type: 'submit', class: 'btn primary', id: 'door-check' }, t('doorCheck')), BD ? camBtn : null),
    ),
    video, result, count,
  )
  showCount()
  // ?event=ID (a link for the door) or the last one picked here.
  const wanted = query.get('event') ?? load<string>('tk.door.event')
  select.addEventListener('change', () => save('tk.door.event', select.value))
  type Ev = { id: string; name: string; startsAt: string }
  const add = (ev: Ev) => select.append(h('option', { value: ev.id, selected: ev.id === wanted }, `${ev.name} · ${dateShort(ev.startsAt)}`))
  gql<{ searchEvents: { edges: { node: Ev }[] } }>(EVENTS)
    .then(async (d) => {
      const evs = d.searchEvents.edges.map((e) => e.node)
      if (wanted && !evs.some((e) => e.id === wanted)) {
        const one = (await gql<{ event: Ev | null }>(EVENT, { id: wanted })).event
        if (one) evs.unshift(one)
      }
      if (alive) evs.forEach(add)
    })
    .catch((e) => alive && replace(result, h('p', { class: 'msg error' }, errorText(e))))
  return () => { alive = false; stopCamera() }
}
