// A tiny hyperscript helper: h('div', {class: 'x', onclick: fn}, children...).
export type Child = Node | string | number | null | undefined | false | Child[]
export type Props = Record<string, unknown> | null | undefined

function apply(el: Element, props: Props) {
  if (!props) return
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2).toLowerCase(), v as EventListener)
    } else if (k === 'class') {
      el.setAttribute('class', String(v))
    } else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled') {
      ;(el as any)[k] = v
      if (k === 'disabled' && v) el.setAttribute('disabled', '')
    } else if (k === 'ref' && typeof v === 'function') {
      ;(v as (e: Element) => void)(el)
    } else {
      el.setAttribute(k, v === true ? '' : String(v))
    }
  }
}

function append(el: Node, children: Child[]) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue
    if (Array.isArray(c)) append(el, c)
    else el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)))
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props?: Props, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  apply(el, props)
  append(el, children)
  return el
}

const SVGNS = 'http://www.w3.org/2000/svg'
export function s<K extends keyof SVGElementTagNameMap>(tag: K, props?: Props, ...children: Child[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVGNS, tag)
  apply(el, props)
  append(el, children)
  return el
}

export function clear(el: Element) {
  while (el.firstChild) el.removeChild(el.firstChild)
}

export function replace(el: Element, ...children: Child[]) {
  clear(el)
  append(el, children)
}

let toastTimer = 0
export function toast(msg: string) {
  const t = document.getElementById('toast')
  if (!t) return
  t.textContent = msg
  t.classList.add('show')
  clearTimeout(toastTimer)
  toastTimer = window.setTimeout(() => t.classList.remove('show'), 4000)
}

export function uuid(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID()
  const b = crypto.getRandomValues(new Uint8Array(16))
  b[6] = (b[6] & 0x0f) | 0x40
  b[8] = (b[8] & 0x3f) | 0x80
  const x = [...b].map((v) => v.toString(16).padStart(2, '0')).join('')
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`
}
