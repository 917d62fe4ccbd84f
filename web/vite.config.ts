import { defineConfig } from 'vite'

// `npm run build` writes web/dist, which web/embed.go embeds in the binary.
// `npm run dev` proxies the API to a `ticketing serve` on :8080.
const api = process.env.TICKETING_API ?? 'http://127.0.0.1:8080'

export default defineConfig({
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2020',
    reportCompressedSize: false,
    sourcemap: false,
  },
  server: {
    proxy: {
      '/graphql': { target: api, ws: true },
      '/api': api,
    },
  },
})
