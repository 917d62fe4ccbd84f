import * as auth from './auth'
import { t, type Key } from './i18n'

export class ApiError extends Error {
  constructor(
    public code: string,
    message: string,
    public ext: Record<string, any> = {},
  ) {
    super(message)
  }
}

/** Server clock minus client clock, in ms (from the Date header). */
export let clockSkew = 0
function noteServerDate(res: Response) {
  const d = res.headers.get('Date')
  if (!d) return
  const server = Date.parse(d)
  if (!Number.isNaN(server)) clockSkew = server + 500 - Date.now()
}
export function serverNow() {
  return Date.now() + clockSkew
}

let onUnauthenticated: () => void = () => {}
export function setUnauthenticatedHandler(f: () => void) {
  onUnauthenticated = f
}

export interface GqlOptions {
  /** Retry anonymously when the stored token is refused (catalog reads). */
  anonymousOk?: boolean
  signal?: AbortSignal
}

export async function gql<T = any>(query: string, variables?: Record<string, unknown>, opts: GqlOptions = {}): Promise<T> {
  const tok = auth.token()
  const headers: Record<string, string> = { 'Content-Type': 'application/json', Accept: 'application/json' }
  if (tok) headers.Authorization = `Bearer ${tok}`
  let res: Response
  try {
    res = await fetch('/graphql', { method: 'POST', headers, body: JSON.stringify({ query, variables }), signal: opts.signal })
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e
    throw new ApiError('NETWORK', (e as Error).message)
  }
  noteServerDate(res)
  let body: any
  try {
    body = await res.json()
  } catch {
    throw new ApiError(res.status === 503 ? 'SERVICE_UNAVAILABLE' : 'INTERNAL', `HTTP ${res.status}`)
  }
  const err = body?.errors?.[0]
  if (err) {
    const code = err.extensions?.code ?? 'INTERNAL'
    if (code === 'UNAUTHENTICATED' && tok) {
      auth.signOut()
      onUnauthenticated()
      if (opts.anonymousOk) return gql<T>(query, variables, opts)
    }
    if (!body.data || Object.values(body.data).every((v) => v === null)) {
      throw new ApiError(code, err.message ?? 'error', err.extensions ?? {})
    }
  }
  return body.data as T
}

/** A human sentence for an API error. */
export function errorText(e: unknown): string {
  if (!(e instanceof ApiError)) return t('genericError', { msg: String((e as Error)?.message ?? e) })
  const known: Partial<Record<string, Key>> = {
    NETWORK: 'networkError',
    SERVICE_UNAVAILABLE: 'unavailable',
    SALE_NOT_OPEN: 'saleNotOpen',
    QUEUE_ADMISSION_REQUIRED: 'needQueue',
    NOT_FOUND: 'notFound',
    UNAUTHENTICATED: 'sessionExpired',
    HOLD_EXPIRED: 'holdExpired',
  }
  if (e.code === 'RATE_LIMITED') return t('rateLimited', { n: e.ext.retryAfterSeconds ?? 1 })
  if (e.code === 'HOLD_LIMIT_EXCEEDED') return t('holdLimit', { n: e.ext.limit ?? '?' })
  if (e.code === 'SEAT_UNAVAILABLE') return t('seatTakenGeneric')
  const k = known[e.code]
  return k ? t(k) : t('genericError', { msg: e.message })
}

// ---- GraphQL documents

export const MONEY = 'amount currency'

export const EVENT_CARD = `id name category startsAt saleStatus
  venue { id name city }
  artists { id name }
  minPrice { ${MONEY} } maxPrice { ${MONEY} }
  availability { available capacity }
  saleConditions { saleStartsAt queueRequired }`

export const SEATMAP_FIELDS = `eventId cursor
  seats { seatId sectionId status version }
  generalAdmission { sectionId available version }`

export const HOLD_FIELDS = `id status expiresAt
  total { ${MONEY} }
  items { section { id name kind } seat { id row number } price { ${MONEY} } }`

export const ORDER_FIELDS = `id status createdAt updatedAt
  total { ${MONEY} }
  event { id name startsAt cancelledAt saleConditions { refundDeadline } venue { name city } }
  hold { id status expiresAt items { section { id name } seat { id row number } price { ${MONEY} } } }
  payments { id status checkoutUrl createdAt amount { ${MONEY} } }
  tickets { id code status section { id name } seat { id row number } }`

export const QUEUE_FIELDS = 'eventId status position estimatedWaitSeconds admissionToken admissionExpiresAt'
