import { load, save } from './store'

export type Lang = 'es' | 'en'

const es = {
  appName: 'Entradas',
  skip: 'Saltar al contenido',
  search: 'Buscar',
  myOrders: 'Mis pedidos',
  signIn: 'Entrar',
  signOut: 'Salir',
  signInTitle: 'Entrar para comprar',
  signInName: 'Tu nombre',
  signInHelp: 'Servidor de desarrollo: elige un nombre y recibirás un token de prueba.',
  signInOff: 'El inicio de sesión de desarrollo está desactivado en este servidor. Pega un token JWT:',
  signInToken: 'Token',
  signInGo: 'Entrar',
  cancel: 'Cancelar',
  close: 'Cerrar',
  signedInAs: 'Conectado como {name}',
  sessionExpired: 'Tu sesión ha caducado. Vuelve a entrar.',
  needSignIn: 'Entra para reservar asientos.',
  language: 'Idioma',
  // search
  searchTitle: 'Encuentra tu próximo concierto',
  searchPlaceholder: 'Artista, evento, recinto o ciudad',
  city: 'Ciudad',
  anyCity: 'Cualquier ciudad',
  nearMe: 'Cerca de mí',
  nearMeOn: 'Cerca de ti ({km} km)',
  locating: 'Buscando tu ubicación…',
  noLocation: 'No pudimos obtener tu ubicación.',
  category: 'Categoría',
  allCategories: 'Todo',
  from: 'Desde',
  to: 'Hasta',
  anyDate: 'Cualquier fecha',
  results: '{n} eventos',
  result1: '1 evento',
  noResults: 'No hay eventos que coincidan. Prueba con otra búsqueda.',
  loadMore: 'Ver más',
  loading: 'Cargando…',
  searchFallback: 'La búsqueda no está disponible; mostramos los próximos eventos.',
  clearFilters: 'Quitar filtros',
  kmAway: 'a {km} km',
  withArtists: 'Con {names}',
  // sale / availability
  onSale: 'A la venta',
  soldOut: 'Agotado',
  notYet: 'Pronto a la venta',
  ended: 'Venta cerrada',
  left: 'quedan {n}',
  fewLeft: '¡Últimas {n}!',
  saleOpens: 'A la venta el {date}',
  priceFrom: 'Desde {p}',
  priceRange: '{a} – {b}',
  // event page
  back: 'Volver',
  artists: 'Artistas',
  venue: 'Recinto',
  prices: 'Precios',
  aboutEvent: 'Sobre el evento',
  refundPolicy: 'Devoluciones',
  maxPerUser: 'Máximo {n} entradas por persona',
  holdMinutes: 'Tu reserva dura {n} min',
  queueEvent: 'Venta con sala de espera virtual',
  queueBanner: 'Este evento usa una sala de espera. Entra en la cola para poder elegir asientos.',
  queueEnter: 'Entrar en la sala de espera',
  admitted: 'Es tu turno: tienes hasta las {time} para elegir',
  seatMap: 'Plano de asientos',
  stage: 'ESCENARIO',
  live: 'En directo',
  reconnecting: 'Reconectando…',
  connecting: 'Conectando…',
  legendAvailable: 'Libre',
  legendSelected: 'Tu selección',
  legendHeld: 'Reservado',
  legendSold: 'Vendido',
  zoomIn: 'Acercar',
  zoomOut: 'Alejar',
  row: 'Fila',
  seatShort: 'fila {row}, asiento {n}',
  seatLabel: 'Fila {row}, asiento {n}, {status}, {price}',
  seatLabelSection: '{section}: fila {row}, asiento {n}, {status}, {price}',
  stAvailable: 'disponible',
  stHeld: 'reservado',
  stSold: 'vendido',
  stSelected: 'seleccionado',
  stMine: 'reservado para ti',
  gaAvailable: '{n} disponibles',
  gaArea: 'Pista / de pie',
  seatMapHelp: 'Usa las flechas para moverte entre asientos y Enter o Espacio para elegir.',
  seatMapHelpTouch: 'Toca una zona del plano para acercarte y luego toca un asiento libre para elegirlo. Con − vuelves a ver todo el recinto.',
  yourSelection: 'Tu selección',
  nothingSelected: 'Haz clic en un asiento libre o pide los mejores asientos.',
  nothingSelectedTouch: 'Toca el plano para acercarte y elige asientos libres, o pide los mejores asientos.',
  bestTitle: 'Mejores asientos juntos',
  bestQty: 'Entradas',
  bestSection: 'Zona',
  anySection: 'Cualquier zona',
  bestGo: 'Buscar los mejores',
  gaTitle: 'Entradas de pista',
  holdSeats: 'Reservar {n} entradas',
  holdSeats1: 'Reservar 1 entrada',
  pickSeats: 'Elige tus asientos',
  holding: 'Reservando…',
  total: 'Total',
  remove: 'Quitar',
  tooMany: 'Como máximo {n} entradas por persona.',
  // hold panel
  holdTitle: 'Entradas reservadas para ti',
  holdExpiresIn: 'Tu reserva caduca en',
  holdExpired: 'Tu reserva ha caducado y los asientos han vuelto a la venta.',
  holdCancelled: 'Reserva cancelada.',
  cancelHold: 'Cancelar reserva',
  checkout: 'Pagar {total}',
  goingToPay: 'Abriendo el pago…',
  seatTaken: 'Alguien se ha adelantado: {seats} ya no está libre. Elige otros asientos.',
  seatTakenGeneric: 'Esos asientos ya no están libres. Elige otros.',
  holdLimit: 'Superarías el máximo de {n} entradas por persona para este evento.',
  saleNotOpen: 'La venta no está abierta ahora mismo.',
  needQueue: 'Necesitas pasar por la sala de espera.',
  rateLimited: 'Demasiados intentos. Espera {n} s.',
  unavailable: 'El servicio no está disponible ahora mismo. Inténtalo de nuevo en un momento.',
  networkError: 'Sin conexión con el servidor. Revisa tu conexión.',
  genericError: 'Algo ha fallado: {msg}',
  notFound: 'No encontramos lo que buscas.',
  // orders
  orderTitle: 'Pedido',
  orderStatus_AWAITING_PAYMENT: 'Esperando el pago',
  orderStatus_CONFIRMED: 'Confirmado',
  orderStatus_PAYMENT_FAILED: 'Pago rechazado',
  orderStatus_EXPIRED: 'Caducado',
  orderStatus_CANCELLED: 'Cancelado',
  orderStatus_REFUNDED: 'Reembolsado',
  orderMsg_AWAITING_PAYMENT: 'Estamos esperando la confirmación del proveedor de pagos. Esta página se actualiza sola.',
  orderMsg_CONFIRMED: '¡Listo! Tus entradas están abajo. Muestra el código QR en la entrada.',
  orderMsg_PAYMENT_FAILED: 'El pago no se completó. Puedes intentarlo de nuevo mientras tu reserva siga activa.',
  orderMsg_EXPIRED: 'La reserva caducó antes de confirmar el pago. Si se te cobró algo, se te devolverá.',
  orderMsg_CANCELLED: 'El pedido se canceló.',
  orderMsg_REFUNDED: 'El pedido se reembolsó: tus entradas ya no son válidas y el dinero vuelve a tu medio de pago.',
  requestRefund: 'Solicitar el reembolso',
  refundConfirm: '¿Reembolsar este pedido? Tus entradas dejarán de ser válidas.',
  refundUntil: 'Puedes pedir el reembolso hasta el {time}.',
  ticketVoid: 'Anulada',
  ticketUsed: 'Usada',
  eventCancelled: 'Este evento se canceló. Los pedidos confirmados se reembolsan.',
  doorTitle: 'Control de acceso',
  doorNav: 'Puerta',
  doorEvent: 'Evento',
  doorPick: 'Elige un evento',
  doorCode: 'Código de la entrada',
  doorCodeHelp: 'Escanea el QR con la cámara, o escribe o pega el código.',
  doorCheck: 'Validar',
  doorScan: 'Escanear con la cámara',
  doorScanStop: 'Parar la cámara',
  doorNoCamera: 'Este navegador no puede leer códigos QR con la cámara: escribe o pega el código.',
  doorStaffOnly: 'Esta página es para el personal de acceso.',
  doorSignInStaff: 'Entrar como personal de acceso',
  doorCount: 'Admitidos: {admitted} de {total} lecturas',
  door_ADMITTED: 'ADMITIDA',
  door_ALREADY_USED: 'YA USADA',
  door_VOID: 'ANULADA',
  door_OTHER_EVENT: 'OTRO EVENTO',
  door_INVALID_CODE: 'CÓDIGO NO VÁLIDO',
  doorHint_ADMITTED: 'Puede pasar.',
  doorHint_ALREADY_USED: 'Esta entrada ya entró.',
  doorHint_VOID: 'Entrada anulada (pedido reembolsado o evento cancelado).',
  doorHint_OTHER_EVENT: 'La entrada es de otro evento.',
  doorHint_INVALID_CODE: 'El código no es una entrada válida.',
  payNow: 'Ir al pago',
  holdUntil: 'Tus asientos están reservados hasta las {time}.',
  retryPay: 'Intentar el pago de nuevo',
  returnedVerifying: 'Has vuelto del pago. Comprobando el resultado con el proveedor…',
  tickets: 'Tus entradas',
  ticketFor: 'Entrada',
  generalAdmission: 'Entrada general',
  payments: 'Pagos',
  paymentStatus_PENDING: 'pendiente',
  paymentStatus_UNKNOWN: 'comprobando',
  paymentStatus_SUCCEEDED: 'pagado',
  paymentStatus_FAILED: 'rechazado',
  paymentStatus_CANCELLED: 'cancelado',
  paymentStatus_REFUND_PENDING: 'devolución en curso',
  paymentStatus_REFUNDED: 'devuelto',
  created: 'Creado',
  noOrders: 'Aún no tienes pedidos.',
  viewOrder: 'Ver pedido',
  nTickets: '{n} entradas',
  nTickets1: '1 entrada',
  // queue
  queueTitle: 'Sala de espera',
  queueJoining: 'Entrando en la cola…',
  queueWaiting: 'Estás en la cola',
  queuePosition: 'Posición',
  queueEta: 'Espera estimada',
  queueEtaSoon: 'menos de un minuto',
  queueEtaUnknown: 'calculando…',
  queueEtaMin: '≈ {n} min',
  queueKeepOpen: 'No cierres esta página: cuando llegue tu turno te llevaremos al plano de asientos automáticamente.',
  queueAdmitted: '¡Es tu turno! Te llevamos al plano…',
  queueExpired: 'Tu turno caducó sin usarse.',
  queueRejoin: 'Volver a la cola',
  queueLeave: 'Salir de la cola',
  queueLive: 'Actualización en directo',
  minutes: 'min',
  seconds: 's',
}

type Dict = typeof es
export type Key = keyof Dict

const en: Dict = {
  appName: 'Tickets',
  skip: 'Skip to content',
  search: 'Search',
  myOrders: 'My orders',
  signIn: 'Sign in',
  signOut: 'Sign out',
  signInTitle: 'Sign in to buy',
  signInName: 'Your name',
  signInHelp: 'Development server: pick a name and you get a test token.',
  signInOff: 'Development sign-in is off on this server. Paste a JWT:',
  signInToken: 'Token',
  signInGo: 'Sign in',
  cancel: 'Cancel',
  close: 'Close',
  signedInAs: 'Signed in as {name}',
  sessionExpired: 'Your session expired. Please sign in again.',
  needSignIn: 'Sign in to hold seats.',
  language: 'Language',
  searchTitle: 'Find your next show',
  searchPlaceholder: 'Artist, event, venue or city',
  city: 'City',
  anyCity: 'Any city',
  nearMe: 'Near me',
  nearMeOn: 'Near you ({km} km)',
  locating: 'Finding your location…',
  noLocation: 'We could not get your location.',
  category: 'Category',
  allCategories: 'All',
  from: 'From',
  to: 'To',
  anyDate: 'Any date',
  results: '{n} events',
  result1: '1 event',
  noResults: 'No events match. Try another search.',
  loadMore: 'Show more',
  loading: 'Loading…',
  searchFallback: 'Search is unavailable; showing upcoming events.',
  clearFilters: 'Clear filters',
  kmAway: '{km} km away',
  withArtists: 'With {names}',
  onSale: 'On sale',
  soldOut: 'Sold out',
  notYet: 'On sale soon',
  ended: 'Sale ended',
  left: '{n} left',
  fewLeft: 'Only {n} left!',
  saleOpens: 'On sale {date}',
  priceFrom: 'From {p}',
  priceRange: '{a} – {b}',
  back: 'Back',
  artists: 'Artists',
  venue: 'Venue',
  prices: 'Prices',
  aboutEvent: 'About the event',
  refundPolicy: 'Refunds',
  maxPerUser: 'At most {n} tickets per person',
  holdMinutes: 'Your hold lasts {n} min',
  queueEvent: 'Sale with a virtual waiting room',
  queueBanner: 'This event uses a waiting room. Join the queue to pick seats.',
  queueEnter: 'Enter the waiting room',
  admitted: "It's your turn: pick seats before {time}",
  seatMap: 'Seat map',
  stage: 'STAGE',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  connecting: 'Connecting…',
  legendAvailable: 'Available',
  legendSelected: 'Your pick',
  legendHeld: 'Held',
  legendSold: 'Sold',
  zoomIn: 'Zoom in',
  zoomOut: 'Zoom out',
  row: 'Row',
  seatShort: 'row {row}, seat {n}',
  seatLabel: 'Row {row}, seat {n}, {status}, {price}',
  seatLabelSection: '{section}: row {row}, seat {n}, {status}, {price}',
  stAvailable: 'available',
  stHeld: 'held',
  stSold: 'sold',
  stSelected: 'selected',
  stMine: 'held for you',
  gaAvailable: '{n} available',
  gaArea: 'Standing area',
  seatMapHelp: 'Use the arrow keys to move between seats and Enter or Space to pick.',
  seatMapHelpTouch: 'Tap an area of the map to zoom in, then tap an available seat to pick it. − shows the whole venue again.',
  yourSelection: 'Your selection',
  nothingSelected: 'Click an available seat or ask for the best seats.',
  nothingSelectedTouch: 'Tap the map to zoom in and pick available seats, or ask for the best seats.',
  bestTitle: 'Best seats together',
  bestQty: 'Tickets',
  bestSection: 'Section',
  anySection: 'Any section',
  bestGo: 'Find best seats',
  gaTitle: 'Standing tickets',
  holdSeats: 'Hold {n} tickets',
  holdSeats1: 'Hold 1 ticket',
  pickSeats: 'Pick your seats',
  holding: 'Holding…',
  total: 'Total',
  remove: 'Remove',
  tooMany: 'At most {n} tickets per person.',
  holdTitle: 'Tickets held for you',
  holdExpiresIn: 'Your hold expires in',
  holdExpired: 'Your hold expired and the seats are back on sale.',
  holdCancelled: 'Hold cancelled.',
  cancelHold: 'Cancel hold',
  checkout: 'Pay {total}',
  goingToPay: 'Opening the payment page…',
  seatTaken: 'Someone got there first: {seats} is no longer available. Please pick other seats.',
  seatTakenGeneric: 'Those seats are no longer available. Please pick others.',
  holdLimit: 'That would exceed the limit of {n} tickets per person for this event.',
  saleNotOpen: 'The sale is not open right now.',
  needQueue: 'You need to go through the waiting room.',
  rateLimited: 'Too many attempts. Wait {n} s.',
  unavailable: 'The service is unavailable right now. Try again in a moment.',
  networkError: 'Cannot reach the server. Check your connection.',
  genericError: 'Something went wrong: {msg}',
  notFound: "We couldn't find that.",
  orderTitle: 'Order',
  orderStatus_AWAITING_PAYMENT: 'Awaiting payment',
  orderStatus_CONFIRMED: 'Confirmed',
  orderStatus_PAYMENT_FAILED: 'Payment failed',
  orderStatus_EXPIRED: 'Expired',
  orderStatus_CANCELLED: 'Cancelled',
  orderStatus_REFUNDED: 'Refunded',
  orderMsg_AWAITING_PAYMENT: 'Waiting for the payment provider to confirm. This page updates by itself.',
  orderMsg_CONFIRMED: 'All set! Your tickets are below. Show the QR code at the door.',
  orderMsg_PAYMENT_FAILED: 'The payment did not go through. You can try again while your hold is active.',
  orderMsg_EXPIRED: 'The hold ran out before the payment was confirmed. Any charge will be refunded.',
  orderMsg_CANCELLED: 'The order was cancelled.',
  orderMsg_REFUNDED: 'The order was refunded: your tickets are no longer valid and the money goes back to your payment method.',
  requestRefund: 'Request a refund',
  refundConfirm: 'Refund this order? Your tickets will no longer be valid.',
  refundUntil: 'You can request a refund until {time}.',
  ticketVoid: 'Void',
  ticketUsed: 'Used',
  eventCancelled: 'This event was cancelled. Confirmed orders are refunded.',
  doorTitle: 'Door check-in',
  doorNav: 'Door',
  doorEvent: 'Event',
  doorPick: 'Pick an event',
  doorCode: 'Ticket code',
  doorCodeHelp: 'Scan the QR code with the camera, or type or paste the code.',
  doorCheck: 'Check in',
  doorScan: 'Scan with the camera',
  doorScanStop: 'Stop the camera',
  doorNoCamera: 'This browser cannot read QR codes with the camera: type or paste the code.',
  doorStaffOnly: 'This page is for door staff.',
  doorSignInStaff: 'Sign in as door staff',
  doorCount: 'Admitted: {admitted} of {total} scans',
  door_ADMITTED: 'ADMITTED',
  door_ALREADY_USED: 'ALREADY USED',
  door_VOID: 'VOID',
  door_OTHER_EVENT: 'OTHER EVENT',
  door_INVALID_CODE: 'INVALID CODE',
  doorHint_ADMITTED: 'Let them in.',
  doorHint_ALREADY_USED: 'This ticket has already been used.',
  doorHint_VOID: 'Void ticket (order refunded or event cancelled).',
  doorHint_OTHER_EVENT: 'The ticket is for another event.',
  doorHint_INVALID_CODE: 'The code is not a valid ticket.',
  payNow: 'Go to payment',
  holdUntil: 'Your seats are held until {time}.',
  retryPay: 'Try the payment again',
  returnedVerifying: 'You are back from the payment page. Checking the result with the provider…',
  tickets: 'Your tickets',
  ticketFor: 'Ticket',
  generalAdmission: 'General admission',
  payments: 'Payments',
  paymentStatus_PENDING: 'pending',
  paymentStatus_UNKNOWN: 'checking',
  paymentStatus_SUCCEEDED: 'paid',
  paymentStatus_FAILED: 'declined',
  paymentStatus_CANCELLED: 'cancelled',
  paymentStatus_REFUND_PENDING: 'refund under way',
  paymentStatus_REFUNDED: 'refunded',
  created: 'Created',
  noOrders: 'You have no orders yet.',
  viewOrder: 'View order',
  nTickets: '{n} tickets',
  nTickets1: '1 ticket',
  queueTitle: 'Waiting room',
  queueJoining: 'Joining the queue…',
  queueWaiting: "You're in the queue",
  queuePosition: 'Position',
  queueEta: 'Estimated wait',
  queueEtaSoon: 'under a minute',
  queueEtaUnknown: 'calculating…',
  queueEtaMin: '≈ {n} min',
  queueKeepOpen: "Keep this page open: when it's your turn we'll take you to the seat map automatically.",
  queueAdmitted: "It's your turn! Taking you to the seat map…",
  queueExpired: 'Your turn passed unused.',
  queueRejoin: 'Join the queue again',
  queueLeave: 'Leave the queue',
  queueLive: 'Live updates',
  minutes: 'min',
  seconds: 's',
}

const dicts: Record<Lang, Dict> = { es, en }

// The catalog's categories (its data is in Spanish) as shown in each language;
// an unknown one is shown as it is.
const categories: Record<string, Record<Lang, string>> = {
  concierto: { es: 'Conciertos', en: 'Concerts' },
  festival: { es: 'Festivales', en: 'Festivals' },
  teatro: { es: 'Teatro', en: 'Theatre' },
  comedia: { es: 'Comedia', en: 'Comedy' },
  familia: { es: 'Familia', en: 'Family' },
  deportes: { es: 'Deportes', en: 'Sports' },
}
/** The catalog categories the app knows, in the order its chips show them without facets. */
export const CATEGORIES = Object.keys(categories)
export function categoryLabel(c: string): string {
  return categories[c.toLowerCase()]?.[lang] ?? c
}

function initial(): Lang {
  const saved = load<Lang>('tk.lang')
  if (saved === 'es' || saved === 'en') return saved
  const nav = (navigator.languages?.[0] ?? navigator.language ?? 'es').toLowerCase()
  return nav.startsWith('es') ? 'es' : 'en'
}

export let lang: Lang = initial()
document.documentElement.lang = lang
const listeners = new Set<() => void>()

export function setLang(l: Lang) {
  lang = l
  save('tk.lang', l)
  document.documentElement.lang = l
  listeners.forEach((f) => f())
}
export function onLang(f: () => void) {
  listeners.add(f)
  return () => listeners.delete(f)
}

export function t(key: Key, vars?: Record<string, string | number>): string {
  let s: string = dicts[lang][key] ?? es[key] ?? key
  if (vars) for (const [k, v] of Object.entries(vars)) s = s.split(`{${k}}`).join(String(v))
  return s
}

export function locale() {
  return lang === 'es' ? 'es-ES' : 'en-GB'
}

// ---- formatting

export interface Money {
  amount: number
  currency: string
}

// ISO 4217 minor-unit exponents that are not 2 (the same table as the Go
// side's payments.MinorUnits). The contract's amounts are in
// ISO minor units: the browser's locale data is no guide (it formats COP,
// whose ISO exponent is 2, without decimals, and would read cents as pesos).
const exponents: Record<string, number> = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0,
  UGX: 0, UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
  CLF: 4, UYW: 4,
}
export function minorUnits(currency: string): number {
  return exponents[currency.toUpperCase()] ?? 2
}

const nfCache = new Map<string, Intl.NumberFormat>()
function nf(currency: string, digits: number) {
  const k = `${locale()} ${currency} ${digits}`
  let f = nfCache.get(k)
  if (!f) {
    f = new Intl.NumberFormat(locale(), { style: 'currency', currency, minimumFractionDigits: digits, maximumFractionDigits: digits })
    nfCache.set(k, f)
  }
  return f
}

/** Minor units -> "45 €", "45,50 €", "120.000 COP" (whole amounts without decimals). */
export function money(m: Money | null | undefined): string {
  if (!m) return ''
  const exp = minorUnits(m.currency)
  const v = m.amount / 10 ** exp
  return nf(m.currency, Number.isInteger(v) ? 0 : exp).format(v)
}

export function dateLong(iso: string): string {
  return new Date(iso).toLocaleString(locale(), { weekday: 'long', day: 'numeric', month: 'long', year: 'numeric', hour: '2-digit', minute: '2-digit' })
}
export function dateShort(iso: string): string {
  return new Date(iso).toLocaleString(locale(), { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' })
}
export function dayMonth(iso: string): { day: string; month: string; weekday: string } {
  const d = new Date(iso)
  return {
    day: String(d.getDate()),
    month: d.toLocaleString(locale(), { month: 'short' }).replace('.', ''),
    weekday: d.toLocaleString(locale(), { weekday: 'short' }).replace('.', ''),
  }
}
/** "3 dic 2026, 10:00": a day with its year and time. */
export function dateTime(iso: string): string {
  return new Date(iso).toLocaleString(locale(), { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit' })
}
export function timeOnly(iso: string): string {
  return new Date(iso).toLocaleTimeString(locale(), { hour: '2-digit', minute: '2-digit' })
}
