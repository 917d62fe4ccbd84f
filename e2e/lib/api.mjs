// Talks to the API under test directly (catalog set-up, background users).
export const BASE = process.env.E2E_BASE_URL ?? 'http://127.0.0.1:18080'
export const ADMIN = process.env.E2E_ADMIN_TOKEN ?? ''

export async function gql(query, variables = {}, token = ADMIN) {
  const res = await fetch(`${BASE}/graphql`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
  })
  const body = await res.json()
  if (body.errors?.length) {
    const e = new Error(`${body.errors[0].extensions?.code}: ${body.errors[0].message}`)
    e.code = body.errors[0].extensions?.code
    throw e
  }
  return body.data
}

export async function devToken(name) {
  const res = await fetch(`${BASE}/api/dev/token`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name }) })
  if (!res.ok) throw new Error(`dev token: HTTP ${res.status}`)
  return (await res.json()).token
}

/** A small deterministic catalog: one venue (GA floor + two seated sections), one artist, two events. */
export async function seedCatalog() {
  // Time plus six random characters: test files seed at the same moment,
  // and suffixes a letter or two apart would match each other's events in a
  // typo-tolerant search.
  const suffix = Date.now().toString(36) + Math.random().toString(36).slice(2, 8).padEnd(6, 'x')
  const { createVenue: venue } = await gql(`mutation($in: CreateVenueInput!) { createVenue(input: $in) { id sections { id name kind } } }`, {
    in: {
      name: `Sala Prueba ${suffix}`,
      address: 'Calle Mayor 1',
      city: 'Madrid',
      country: 'ES',
      location: { lat: 40.4168, lon: -3.7038 },
      sections: [
        { name: 'Pista', kind: 'GENERAL_ADMISSION', capacity: 40, layout: { x: -70, y: 20, width: 140, height: 45 } },
        { name: 'Platea', kind: 'SEATED', rows: ['A', 'B', 'C', 'D', 'E', 'F'].map((label) => ({ label, seats: 12 })), layout: { x: -55, y: 85, curve: 4 } },
        { name: 'Anfiteatro', kind: 'SEATED', rows: ['A', 'B', 'C'].map((label) => ({ label, seats: 16 })), layout: { x: -75, y: 170, curve: 8 } },
      ],
    },
  })
  // Artist names are unique: each run (and each test file) gets its own.
  const { createArtist: artist } = await gql(`mutation($name: String!) { createArtist(input: {name: $name, bio: "Banda de prueba", genres: ["pop"]}) { id } }`, { name: `Los Navegadores ${suffix}` })
  const price = (name, amount) => ({ sectionId: venue.sections.find((s) => s.name === name).id, amount, currency: 'EUR' })
  const prices = [price('Pista', 3000), price('Platea', 4500), price('Anfiteatro', 2500)]
  const now = Date.now()
  const day = 24 * 3600 * 1000
  const ev = async (name, queueRequired, days) =>
    (await gql(`mutation($in: CreateEventInput!) { createEvent(input: $in) { id name } }`, {
      in: {
        name, description: 'Un concierto para las pruebas de navegador.', category: 'concierto',
        startsAt: new Date(now + days * day).toISOString(), venueId: venue.id, artistIds: [artist.id],
        saleStartsAt: new Date(now - 3600 * 1000).toISOString(), prices, maxTicketsPerUser: 4,
        holdDurationSeconds: 600, queueRequired, refundPolicy: 'Sin devoluciones.',
      },
    })).createEvent
  const open = await ev(`Los Navegadores en directo ${suffix}`, false, 10)
  const queued = await ev(`Los Navegadores: fecha extra ${suffix}`, true, 11)
  return { venue, open, queued, suffix }
}
