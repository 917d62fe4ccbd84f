// The interactive SVG seat map: seats drawn at their venue x/y, sections as
// their bounds, the stage at y = 0 (rows grow away from it, downwards here).
// One tab stop (roving tabindex); arrows move by geometry; Enter/Space pick.
// On a touch screen a seat's tap target is its whole cell (the nearest seat
// within half the seat spacing), and a tap on a map drawn too small for that
// (cells under MIN_TAP_PX) asks to zoom in there instead of picking.
import { s } from './dom'
import { locale, t, money, type Money } from './i18n'

export type Status = 'AVAILABLE' | 'HELD' | 'SOLD'

export interface Rect {
  x: number
  y: number
  width: number
  height: number
}
export interface SeatInfo {
  id: string
  row: string
  number: number
  x: number
  y: number
  sectionId: string
}
export interface SectionInfo {
  id: string
  name: string
  kind: 'SEATED' | 'GENERAL_ADMISSION'
  capacity: number
  bounds: Rect
  seats: SeatInfo[]
  price?: Money
  color: string
}

export const PALETTE = ['#7c3aed', '#2563eb', '#db2777', '#0891b2', '#ea580c', '#4f46e5', '#9333ea', '#0284c7', '#c026d3']

/** The smallest comfortable tap target, in CSS px (the platforms' guidelines). */
export const MIN_TAP_PX = 44

interface Opts {
  onToggle(seatId: string): void
  onGa(sectionId: string): void
  /** A touch on a map drawn too small to pick a seat: zoom in around that point. */
  onZoomAt?(clientX: number, clientY: number): void
}

export class SeatMapView {
  readonly el: SVGSVGElement
  private nodes = new Map<string, SVGCircleElement>()
  private seats = new Map<string, SeatInfo>()
  private sections = new Map<string, SectionInfo>()
  private gaText = new Map<string, SVGTSpanElement>()
  private gaNode = new Map<string, SVGGElement>()
  status = new Map<string, { status: Status; version: number }>()
  ga = new Map<string, { available: number; version: number }>()
  selected = new Set<string>()
  mine = new Set<string>()
  conflict = new Set<string>()
  private focusId: string | null = null
  /** The median distance between neighbouring seats, in venue units. */
  readonly spacing: number
  private vbWidth: number

  constructor(sections: SectionInfo[], private opts: Opts) {
    let minX = Infinity, minY = 0, maxX = -Infinity, maxY = -Infinity
    const grow = (x: number, y: number) => {
      minX = Math.min(minX, x); maxX = Math.max(maxX, x); minY = Math.min(minY, y); maxY = Math.max(maxY, y)
    }
    for (const sec of sections) {
      this.sections.set(sec.id, sec)
      const b = sec.bounds
      if (b && (b.width > 0 || b.height > 0)) { grow(b.x, b.y); grow(b.x + b.width, b.y + b.height) }
      for (const seat of sec.seats) { grow(seat.x, seat.y); this.seats.set(seat.id, seat) }
    }
    if (!Number.isFinite(minX)) { minX = -100; maxX = 100; maxY = 100 }
    const spacing = estimateSpacing(sections)
    this.spacing = spacing
    const r = Math.max(1.5, spacing * 0.38)
    const stageW = Math.max(60, (maxX - minX) * 0.42)
    const cx = minX <= 0 && maxX >= 0 ? 0 : (minX + maxX) / 2
    const stageH = Math.max(18, spacing * 2.4)
    const pad = spacing * 2.5
    const fsz = Math.max(5, spacing * 0.95)
    const labelW = Math.max(0, ...sections.map((x) => x.name.length)) * fsz * 0.62
    const side = pad + labelW + spacing * 2
    const vb = { x: minX - side, y: -stageH - spacing - pad, w: maxX - minX + 2 * side, h: maxY + stageH + spacing + 2 * pad + fsz * 2 }
    this.vbWidth = vb.w

    this.el = s('svg', {
      class: 'seatmap',
      viewBox: `${vb.x} ${vb.y} ${vb.w} ${vb.h}`,
      role: 'group',
      'aria-label': t('seatMap'),
      'aria-describedby': 'seatmap-help',
      preserveAspectRatio: 'xMidYMin meet',
      onkeydown: (e: KeyboardEvent) => this.key(e),
      onclick: (e: MouseEvent) => {
        if ((e.target as Element).closest?.('.ga-area')) return
        const touch = (e as PointerEvent).pointerType === 'touch'
        if (touch && this.opts.onZoomAt && this.cellPx() < MIN_TAP_PX) {
          this.opts.onZoomAt(e.clientX, e.clientY)
          return
        }
        const id = (e.target as Element).getAttribute?.('data-seat') ?? (touch ? this.nearest(e.clientX, e.clientY) : null)
        if (id) { this.focus(id); this.opts.onToggle(id) }
      },
    })
    this.el.style.setProperty('--seat-r', String(r))
    this.el.append(
      s('defs', null,
        s('pattern', { id: 'held-hatch', width: 3, height: 3, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
          s('rect', { width: 3, height: 3, fill: '#e2e8f0' }),
          s('line', { x1: 0, y1: 0, x2: 0, y2: 3, stroke: '#94a3b8', 'stroke-width': 1.4 })),
      ),
      s('g', { class: 'stage', 'aria-hidden': 'true' },
        s('rect', { x: cx - stageW / 2, y: -stageH - spacing * 0.6, width: stageW, height: stageH, rx: stageH / 3 }),
        s('text', { x: cx, y: -stageH / 2 - spacing * 0.6, 'dominant-baseline': 'central', 'text-anchor': 'middle', 'font-size': Math.min(stageH * 0.45, 14, stageW / (t('stage').length * 0.95)) }, t('stage')),
      ),
    )
    const fs = fsz
    for (const sec of sections) {
      const b = sec.bounds
      const g = s('g', { class: `section ${sec.kind === 'GENERAL_ADMISSION' ? 'ga' : 'seated'}`, style: `--c:${sec.color}` })
      if (sec.kind === 'GENERAL_ADMISSION') {
        // One text, two lines: its visible text reads "Pista 40 disponibles", the start of its accessible name.
        const txt = s('tspan', { x: b.x + b.width / 2, y: b.y + b.height / 2 + fs * 0.9, class: 'ga-count', 'font-size': fs })
        const ga = s('g', {
          class: 'ga-area', tabindex: 0, role: 'button', 'data-ga': sec.id,
          onclick: () => this.opts.onGa(sec.id),
          onkeydown: (e: KeyboardEvent) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); this.opts.onGa(sec.id) } },
        },
          s('rect', { x: b.x, y: b.y, width: b.width, height: b.height, rx: spacing * 0.8 }),
          s('text', { 'text-anchor': 'middle' },
            s('tspan', { x: b.x + b.width / 2, y: b.y + b.height / 2 - fs * 0.3, class: 'ga-name', 'font-size': fs * 1.2 }, sec.name), ' ', txt),
        )
        this.gaText.set(sec.id, txt)
        this.gaNode.set(sec.id, ga)
        g.append(ga)
      } else {
        // The section's shape: the convex hull of its seats, padded by a wide
        // round stroke (its bounds box would overlap rotated neighbours).
        const hull = convexHull(sec.seats.map((x) => [x.x, x.y] as [number, number]))
        g.append(s('polygon', { class: 'bounds', points: hull.map((p) => p.join(',')).join(' '), 'stroke-width': r * 4.5 }))
        // The name goes outside, on the side facing away from the venue's centre.
        const lp = labelPoint(hull, (minX + maxX) / 2, maxY * 0.45, spacing * 1.2 + fs)
        g.append(s('text', { class: 'sec-name', x: lp.x, y: lp.y, 'text-anchor': lp.anchor, 'dominant-baseline': 'central', 'font-size': fs, 'aria-hidden': 'true' }, sec.name))
        // Row labels before the first seat of each row.
        const rows = new Map<string, SeatInfo[]>()
        for (const seat of sec.seats) {
          const list = rows.get(seat.row) ?? []
          list.push(seat)
          rows.set(seat.row, list)
        }
        const labels = s('g', { class: 'row-labels', 'aria-hidden': 'true' })
        for (const [row, list] of rows) {
          list.sort((a, b) => a.number - b.number)
          const a = list[0], nb = list[1] ?? { x: a.x + 1, y: a.y }
          const dx = a.x - nb.x, dy = a.y - nb.y, len = Math.hypot(dx, dy) || 1
          labels.append(s('text', { x: a.x + (dx / len) * spacing * 1.1, y: a.y + (dy / len) * spacing * 1.1, 'text-anchor': 'middle', 'dominant-baseline': 'central', 'font-size': fs * 0.8 }, row))
        }
        g.append(labels)
        const seatsG = s('g', { class: 'seats' })
        for (const seat of sec.seats) {
          const c = s('circle', { class: 'seat', cx: seat.x, cy: seat.y, r, 'data-seat': seat.id, tabindex: -1, role: 'checkbox', 'aria-checked': 'false' })
          this.nodes.set(seat.id, c)
          seatsG.append(c)
        }
        g.append(seatsG)
      }
      this.el.append(g)
    }
  }

  private label(seat: SeatInfo): string {
    const sec = this.sections.get(seat.sectionId)
    const st = this.status.get(seat.id)?.status ?? 'AVAILABLE'
    const status = this.mine.has(seat.id) ? t('stMine') : this.selected.has(seat.id) ? t('stSelected') : st === 'AVAILABLE' ? t('stAvailable') : st === 'HELD' ? t('stHeld') : t('stSold')
    return t('seatLabelSection', { section: sec?.name ?? '', row: seat.row, n: seat.number, status, price: money(sec?.price) })
  }

  /** A GA area's accessible name: its visible text ("Pista 40 disponibles"), then the price. */
  private gaLabel(id: string, n: number): string {
    const sec = this.sections.get(id)
    return `${sec?.name} ${t('gaAvailable', { n: n.toLocaleString(locale()) })}, ${money(sec?.price)}`
  }

  /** Redraw one seat's classes and label from the state maps. */
  paint(id: string) {
    const c = this.nodes.get(id)
    const seat = this.seats.get(id)
    if (!c || !seat) return
    const st = this.status.get(id)?.status ?? 'AVAILABLE'
    const mine = this.mine.has(id)
    const sel = this.selected.has(id)
    c.setAttribute('class', `seat st-${st}${mine ? ' mine' : ''}${sel ? ' sel' : ''}${this.conflict.has(id) ? ' conflict' : ''}`)
    c.setAttribute('data-status', mine ? 'MINE' : sel ? 'SELECTED' : st)
    c.setAttribute('aria-checked', String(sel || mine))
    c.setAttribute('aria-disabled', String(st !== 'AVAILABLE' && !sel && !mine))
    c.setAttribute('aria-label', this.label(seat))
    const sec = this.sections.get(seat.sectionId)
    c.style.setProperty('--c', sec?.color ?? '#2563eb')
  }

  paintAll() {
    for (const id of this.nodes.keys()) this.paint(id)
    for (const [id, txt] of this.gaText) {
      const n = this.ga.get(id)?.available ?? this.sections.get(id)?.capacity ?? 0
      txt.textContent = t('gaAvailable', { n: n.toLocaleString(locale()) })
      this.gaNode.get(id)?.setAttribute('aria-label', this.gaLabel(id, n))
      this.gaNode.get(id)?.classList.toggle('soldout', n <= 0)
    }
    if (!this.focusId || !this.nodes.has(this.focusId)) {
      const first = [...this.nodes.keys()].find((id) => (this.status.get(id)?.status ?? 'AVAILABLE') === 'AVAILABLE') ?? this.nodes.keys().next().value
      if (first) this.setRoving(first)
    }
  }

  /** Apply a seat change if its version is newer; true when applied. */
  apply(id: string, status: Status, version: number): boolean {
    const cur = this.status.get(id)
    if (cur && cur.version >= version) return false
    this.status.set(id, { status, version })
    this.paint(id)
    return true
  }
  applyGa(sectionId: string, available: number, version: number): boolean {
    const cur = this.ga.get(sectionId)
    if (cur && cur.version >= version) return false
    this.ga.set(sectionId, { available, version })
    const txt = this.gaText.get(sectionId)
    if (txt) txt.textContent = t('gaAvailable', { n: available.toLocaleString(locale()) })
    this.gaNode.get(sectionId)?.setAttribute('aria-label', this.gaLabel(sectionId, available))
    this.gaNode.get(sectionId)?.classList.toggle('soldout', available <= 0)
    return true
  }
  /** A local belief (after our own hold / a conflict): keeps the version so any real update wins. */
  assume(id: string, status: Status) {
    const cur = this.status.get(id)
    this.status.set(id, { status, version: cur?.version ?? 0 })
    this.paint(id)
  }

  /** The seat spacing as drawn now, in CSS px: the size of a seat's tap target. */
  cellPx(): number {
    const w = this.el.getBoundingClientRect().width
    return w > 0 ? (this.spacing * w) / this.vbWidth : 0
  }

  /** The seat whose cell holds the point (within half a spacing of it), if any. */
  nearest(clientX: number, clientY: number): string | null {
    const m = this.el.getScreenCTM()
    if (!m) return null
    const p = new DOMPoint(clientX, clientY).matrixTransform(m.inverse())
    let best: string | null = null
    let bestD = this.spacing * 0.6
    for (const [id, seat] of this.seats) {
      const d = Math.hypot(seat.x - p.x, seat.y - p.y)
      if (d < bestD) { bestD = d; best = id }
    }
    return best
  }

  seat(id: string) {
    return this.seats.get(id)
  }
  section(id: string) {
    return this.sections.get(id)
  }
  isAvailable(id: string) {
    return (this.status.get(id)?.status ?? 'AVAILABLE') === 'AVAILABLE'
  }

  private setRoving(id: string) {
    if (this.focusId) this.nodes.get(this.focusId)?.setAttribute('tabindex', '-1')
    this.focusId = id
    this.nodes.get(id)?.setAttribute('tabindex', '0')
  }
  focus(id: string) {
    this.setRoving(id)
    this.nodes.get(id)?.focus()
  }

  private key(e: KeyboardEvent) {
    const id = (e.target as Element).getAttribute?.('data-seat')
    if (!id) return
    const dirs: Record<string, [number, number]> = { ArrowRight: [1, 0], ArrowLeft: [-1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] }
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault()
      this.opts.onToggle(id)
      return
    }
    const d = dirs[e.key]
    if (!d) return
    e.preventDefault()
    const cur = this.seats.get(id)!
    let best: string | null = null
    let bestScore = Infinity
    for (const [oid, o] of this.seats) {
      if (oid === id) continue
      const vx = o.x - cur.x, vy = o.y - cur.y
      const along = vx * d[0] + vy * d[1]
      if (along <= 0.5) continue
      const perp = Math.abs(vx * d[1] - vy * d[0])
      const score = along + perp * 2.5 + (o.sectionId === cur.sectionId ? 0 : 15)
      if (score < bestScore) { bestScore = score; best = oid }
    }
    if (best) this.focus(best)
  }

  flashConflict(ids: string[]) {
    const old = [...this.conflict]
    this.conflict = new Set(ids)
    for (const id of old) this.paint(id)
    for (const id of ids) this.paint(id)
  }
}

function estimateSpacing(sections: SectionInfo[]): number {
  const ds: number[] = []
  for (const sec of sections) {
    for (let i = 1; i < sec.seats.length && ds.length < 400; i++) {
      const a = sec.seats[i - 1], b = sec.seats[i]
      if (a.row === b.row) ds.push(Math.hypot(a.x - b.x, a.y - b.y))
    }
  }
  if (!ds.length) return 10
  ds.sort((a, b) => a - b)
  return ds[Math.floor(ds.length / 2)] || 10
}

/** Andrew's monotone chain. */
function convexHull(pts: [number, number][]): [number, number][] {
  if (pts.length < 3) return pts
  const p = [...pts].sort((a, b) => a[0] - b[0] || a[1] - b[1])
  const cross = (o: number[], a: number[], b: number[]) => (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
  const lower: [number, number][] = []
  for (const q of p) { while (lower.length >= 2 && cross(lower[lower.length - 2], lower[lower.length - 1], q) <= 0) lower.pop(); lower.push(q) }
  const upper: [number, number][] = []
  for (let i = p.length - 1; i >= 0; i--) { const q = p[i]; while (upper.length >= 2 && cross(upper[upper.length - 2], upper[upper.length - 1], q) <= 0) upper.pop(); upper.push(q) }
  return lower.slice(0, -1).concat(upper.slice(0, -1))
}

/** Where a section's name goes: past its hull, away from (cx, cy). */
function labelPoint(hull: [number, number][], cx: number, cy: number, gap: number): { x: number; y: number; anchor: string } {
  let sx = 0, sy = 0
  for (const [x, y] of hull) { sx += x; sy += y }
  const mx = sx / hull.length, my = sy / hull.length
  let dx = mx - cx, dy = my - cy
  const len = Math.hypot(dx, dy) || 1
  dx /= len; dy /= len
  // Side sections (mostly left/right of the centre) get their label beside them.
  // Every label goes beside its section (central ones on the right), where
  // it cannot cover the sections behind.
  dx = dx < -0.3 ? -1 : 1
  dy = 0
  let far = -Infinity
  for (const [x, y] of hull) far = Math.max(far, (x - mx) * dx + (y - my) * dy)
  const x = mx + dx * (far + gap), y = my + dy * (far + gap)
  return { x, y, anchor: dx > 0 ? 'start' : dx < 0 ? 'end' : 'middle' }
}
