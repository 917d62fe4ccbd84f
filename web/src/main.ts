import './style.css'
import * as auth from './auth'
import { setUnauthenticatedHandler } from './api'
import { h, replace, toast } from './dom'
import { icon } from './icons'
import { lang, onLang, setLang, t, type Lang } from './i18n'
import { load } from './store'
import { render, route, setOnRoute, startRouter } from './router'
import { searchPage } from './pages/search'
import { eventPage } from './pages/event'
import { orderPage, ordersPage } from './pages/orders'
import { queuePage } from './pages/queue'
import { doorPage } from './pages/door'

// ---- header

let signInResolve: ((ok: boolean) => void) | null = null

/** Opens the sign-in dialog; resolves true once signed in. */
export function requireSignIn(): Promise<boolean> {
  if (auth.token()) return Promise.resolve(true)
  return new Promise((resolve) => {
    signInResolve = resolve
    openSignIn()
  })
}
;(window as any).__requireSignIn = requireSignIn

function openSignIn() {
  const dlg = document.getElementById('signin') as HTMLDialogElement | null
  dlg?.remove()
  const err = h('p', { class: 'error', role: 'alert' })
  const name = h('input', { id: 'signin-name', name: 'name', autocomplete: 'nickname', required: true, maxlength: 40, placeholder: 'Ana' })
  const tok = h('textarea', { id: 'signin-token', rows: 3 })
  const body = h('div', null, h('p', { class: 'muted' }, t('loading')))
  const finish = (ok: boolean) => {
    d.close()
    d.remove()
    signInResolve?.(ok)
    signInResolve = null
  }
  const d = h(
    'dialog',
    { id: 'signin', 'aria-labelledby': 'signin-title', oncancel: () => finish(false) },
    h('form', {
      method: 'dialog',
      onsubmit: async (e: Event) => {
        e.preventDefault()
        err.textContent = ''
        try {
          if (name.isConnected) await auth.devSignIn(name.value)
          else auth.signIn(tok.value.trim().replace(/^Bearer\s+/i, ''))
          finish(true)
          toast(t('signedInAs', { name: auth.userName() ?? '' }))
        } catch (ex) {
          err.textContent = (ex as Error).message
        }
      },
    },
      h('h2', { id: 'signin-title' }, t('signInTitle')),
      body,
      err,
      h('div', { class: 'row end' },
        h('button', { type: 'button', class: 'btn ghost', onclick: () => finish(false) }, t('cancel')),
        h('button', { type: 'submit', class: 'btn primary', id: 'signin-submit' }, t('signInGo')),
      ),
    ),
  )
  document.body.append(d)
  d.showModal()
  auth.devSignInEnabled().then((dev) => {
    if (dev) replace(body, h('label', { for: 'signin-name' }, t('signInName')), name, h('p', { class: 'muted small' }, t('signInHelp')))
    else replace(body, h('label', { for: 'signin-token' }, t('signInOff')), tok)
    ;(dev ? name : tok).focus()
  })
}

function header() {
  const top = document.getElementById('top')!
  const user = auth.userName()
  const langSel = h('select', {
    'aria-label': t('language'),
    id: 'lang',
    onchange: (e: Event) => setLang((e.target as HTMLSelectElement).value as Lang),
  },
    h('option', { value: 'es', selected: lang === 'es' }, 'ES'),
    h('option', { value: 'en', selected: lang === 'en' }, 'EN'),
  )
  replace(
    top,
    h('div', { class: 'bar' },
      h('a', { href: '/', class: 'brand', 'aria-label': t('appName') }, icon('ticket', 'logo'), h('span', { class: 'brand-name' }, t('appName'))),
      h('nav', { 'aria-label': 'main' },
        h('a', { href: '/', class: 'nav' }, t('search')),
        user ? h('a', { href: '/orders', class: 'nav', id: 'nav-orders' }, t('myOrders')) : null,
        auth.isStaff() ? h('a', { href: '/door', class: 'nav', id: 'nav-door' }, t('doorNav')) : null,
      ),
      h('div', { class: 'grow' }),
      langSel,
      user
        ? h('div', { class: 'user' },
            h('span', { class: 'avatar', 'aria-hidden': 'true' }, user.slice(0, 1).toUpperCase()),
            h('span', { class: 'uname', id: 'user-name' }, user),
            h('button', { class: 'btn ghost small', id: 'signout', onclick: () => { auth.signOut(); render() } }, t('signOut')),
          )
        : h('button', { class: 'btn primary small', id: 'signin-open', onclick: () => requireSignIn().then((ok) => ok && render()) }, t('signIn')),
    ),
  )
  const skip = document.querySelector('.skip')
  if (skip) skip.textContent = t('skip')
}

function notFound(root: HTMLElement) {
  root.append(h('section', { class: 'page narrow' }, h('h1', null, t('notFound')), h('a', { href: '/', class: 'btn primary' }, t('search'))))
}

// A return from the payment provider to "/" (its fallback) goes to the last order.
function paymentReturn(): boolean {
  const q = new URLSearchParams(location.search)
  if (location.pathname === '/' && q.has('payment_id')) {
    const last = load<string>('tk.lastOrder')
    if (last) {
      history.replaceState(null, '', `/orders/${encodeURIComponent(last)}?returned=1&${q}`)
      return true
    }
  }
  return false
}

route(/^\/$/, searchPage)
route(/^\/events\/([^/]+)\/?$/, eventPage)
route(/^\/orders\/?$/, ordersPage)
route(/^\/orders\/([^/]+)\/?$/, orderPage)
route(/^\/queue\/([^/]+)\/?$/, queuePage)
route(/^\/door\/?$/, doorPage)
route(/^/, notFound)

setOnRoute(() => header())
auth.onAuth(header)
onLang(render)
setUnauthenticatedHandler(() => toast(t('sessionExpired')))
paymentReturn()
startRouter()
