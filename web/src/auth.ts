import { load, save } from './store'

interface Session {
  token: string
  name: string
}

let session: Session | null = load<Session>('tk.session')
const listeners = new Set<() => void>()

function claims(token: string): { sub?: string; exp?: number; roles?: string[] } {
  try {
    const p = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')
    return JSON.parse(atob(p + '='.repeat((4 - (p.length % 4)) % 4)))
  } catch {
    return {}
  }
}

function expired(s: Session | null) {
  if (!s) return true
  const exp = claims(s.token).exp
  return typeof exp === 'number' && exp * 1000 < Date.now()
}
if (expired(session)) session = null

export function token(): string | null {
  if (session && expired(session)) signOut()
  return session?.token ?? null
}
export function userName(): string | null {
  return session?.name ?? null
}
export function userId(): string | null {
  return session ? (claims(session.token).sub ?? null) : null
}
/** Door staff (checkIn): the staff or the admin role. */
export function isStaff(): boolean {
  const r = session ? (claims(session.token).roles ?? []) : []
  return r.includes('staff') || r.includes('admin')
}
export function signIn(tok: string, name?: string) {
  session = { token: tok, name: name || claims(tok).sub || '?' }
  save('tk.session', session)
  listeners.forEach((f) => f())
}
export function signOut() {
  session = null
  save('tk.session', null)
  listeners.forEach((f) => f())
}
export function onAuth(f: () => void) {
  listeners.add(f)
  return () => listeners.delete(f)
}

let devConfig: Promise<boolean> | null = null
export function devSignInEnabled(): Promise<boolean> {
  devConfig ??= fetch('/api/dev/config')
    .then((r) => (r.ok ? r.json() : { devSignIn: false }))
    .then((j) => !!j.devSignIn)
    .catch(() => false)
  return devConfig
}

/** Development sign-in; role 'staff' gives the door staff's token. */
export async function devSignIn(name: string, role?: 'staff'): Promise<void> {
  const r = await fetch('/api/dev/token', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(role ? { name, role } : { name }),
  })
  const j = await r.json().catch(() => ({}))
  if (!r.ok || !j.token) throw new Error(j?.error?.message ?? `HTTP ${r.status}`)
  signIn(j.token, name.trim())
}
