// A small graphql-transport-ws client: one WebSocket per page, lazy, with
// reconnection (exponential backoff, jitter) and re-subscription. Each
// subscription computes its variables at (re)subscribe time, so a seat map
// resumes from its latest cursor after a dropped connection.
import * as auth from './auth'
import { ApiError } from './api'

export type WsStatus = 'idle' | 'connecting' | 'open' | 'reconnecting'

interface Sink {
  next(data: any): void
  error?(e: ApiError): void
  complete?(): void
}
interface Sub {
  id: string
  query: string
  variables: () => Record<string, unknown>
  sink: Sink
}

class WsClient {
  private ws: WebSocket | null = null
  private subs = new Map<string, Sub>()
  private acked = false
  private attempt = 0
  private retryTimer = 0
  private idleTimer = 0
  private seq = 0
  status: WsStatus = 'idle'
  private listeners = new Set<(s: WsStatus) => void>()

  constructor() {
    window.addEventListener('online', () => this.reconnectNow())
    auth.onAuth(() => this.restart())
  }

  onStatus(f: (s: WsStatus) => void) {
    this.listeners.add(f)
    f(this.status)
    return () => this.listeners.delete(f)
  }

  private setStatus(s: WsStatus) {
    if (s === this.status) return
    this.status = s
    this.listeners.forEach((f) => f(s))
  }

  subscribe(query: string, variables: () => Record<string, unknown>, sink: Sink): () => void {
    const id = `s${++this.seq}`
    const sub: Sub = { id, query, variables, sink }
    this.subs.set(id, sub)
    clearTimeout(this.idleTimer)
    if (!this.ws) this.connect()
    else if (this.acked) this.send({ id, type: 'subscribe', payload: { query, variables: variables() } })
    return () => {
      if (!this.subs.delete(id)) return
      if (this.acked) this.send({ id, type: 'complete' })
      if (this.subs.size === 0) this.idleTimer = window.setTimeout(() => this.close(), 3000)
    }
  }

  /** For tests and the "reconnect" affordance: drop the socket as a network loss would. */
  drop() {
    this.ws?.close(4000, 'dropped by client')
  }

  private send(msg: unknown) {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg))
  }

  private connect() {
    clearTimeout(this.retryTimer)
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`
    this.acked = false
    this.setStatus(this.attempt === 0 ? 'connecting' : 'reconnecting')
    let ws: WebSocket
    try {
      ws = new WebSocket(url, 'graphql-transport-ws')
    } catch {
      this.scheduleRetry()
      return
    }
    this.ws = ws
    ws.onopen = () => {
      const tok = auth.token()
      this.send({ type: 'connection_init', payload: tok ? { Authorization: `Bearer ${tok}` } : {} })
    }
    ws.onmessage = (ev) => {
      let m: any
      try {
        m = JSON.parse(ev.data)
      } catch {
        return
      }
      switch (m.type) {
        case 'connection_ack':
          this.acked = true
          this.attempt = 0
          this.setStatus('open')
          for (const s of this.subs.values()) this.send({ id: s.id, type: 'subscribe', payload: { query: s.query, variables: s.variables() } })
          break
        case 'ping':
          this.send({ type: 'pong' })
          break
        case 'next': {
          const s = this.subs.get(m.id)
          if (!s) break
          const err = m.payload?.errors?.[0]
          if (err && !m.payload.data) {
            this.subs.delete(m.id)
            s.sink.error?.(new ApiError(err.extensions?.code ?? 'INTERNAL', err.message, err.extensions ?? {}))
          } else s.sink.next(m.payload.data)
          break
        }
        case 'error': {
          const s = this.subs.get(m.id)
          if (!s) break
          this.subs.delete(m.id)
          const err = Array.isArray(m.payload) ? m.payload[0] : m.payload
          s.sink.error?.(new ApiError(err?.extensions?.code ?? 'INTERNAL', err?.message ?? 'subscription error', err?.extensions ?? {}))
          break
        }
        case 'complete': {
          const s = this.subs.get(m.id)
          if (!s) break
          this.subs.delete(m.id)
          s.sink.complete?.()
          break
        }
      }
    }
    ws.onclose = (ev) => {
      if (this.ws !== ws) return
      this.ws = null
      this.acked = false
      if (ev.code === 4403 && auth.token()) {
        auth.signOut() // the server refused the token: go on anonymously
        return
      }
      if (this.subs.size > 0) this.scheduleRetry()
      else this.setStatus('idle')
    }
  }

  private scheduleRetry() {
    this.setStatus('reconnecting')
    const delay = Math.min(15000, 500 * 2 ** this.attempt) * (0.75 + Math.random() * 0.5)
    this.attempt++
    clearTimeout(this.retryTimer)
    this.retryTimer = window.setTimeout(() => this.connect(), delay)
  }

  private reconnectNow() {
    if (this.subs.size > 0 && !this.ws) {
      this.attempt = 0
      this.connect()
    }
  }

  /** New credentials: reconnect so connection_init carries them. */
  private restart() {
    if (!this.ws) return
    const ws = this.ws
    this.ws = null
    ws.onclose = null
    ws.close(1000, 'credentials changed')
    if (this.subs.size > 0) this.connect()
    else this.setStatus('idle')
  }

  private close() {
    if (this.subs.size > 0 || !this.ws) return
    const ws = this.ws
    this.ws = null
    ws.onclose = null
    ws.close(1000, 'idle')
    this.setStatus('idle')
  }
}

export const ws = new WsClient()
;(window as any).__ticketing = { ws }
