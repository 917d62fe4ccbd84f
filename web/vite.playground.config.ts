import { defineConfig } from 'vite'

// The GraphQL Playground (GraphiQL from npm), a build of its own so that it
// never weighs on the fan-facing bundle: `npm run build` writes
// web/playground/dist, which web/playground.go embeds and serves at
// /playground.
export default defineConfig({
  root: 'playground',
  base: '/playground/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2020',
    reportCompressedSize: false,
    sourcemap: false,
    chunkSizeWarningLimit: 4096,
    rollupOptions: {
      // GraphiQL's React libraries carry "use client" directives, meaningless here.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning)
      },
    },
  },
})
