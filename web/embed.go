// Package web serves the built web app (web/dist, produced by `npm run
// build` in this directory and committed, so `go build` works without npm).
//
// Hashed assets under /assets/ are cached for a year; index.html (served for
// "/" and for every client route such as /events/{id}, /orders/{id},
// /queue/{eventId}) is never cached, so a new deploy is picked up at once.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/ticketing/ticketing/apperr"
)

//go:embed all:dist
var dist embed.FS

// reserved are the server's own path prefixes: a miss under them is a 404,
// never the app's index.html.
var reserved = []string{"/api/", "/graphql", "/playground", "/webhooks/", "/healthz", "/readyz", "/metrics"}

// AppCSP is the Content-Security-Policy of the web app: scripts, styles,
// fonts and API calls from this origin only (WebSocket included), no eval,
// no inline script, no plugin, never framed (the checkout cannot be
// clickjacked). Style attributes are allowed ('unsafe-inline' in
// style-src: the seat map and the queue's progress bar set them; no script
// can run from them), and data: images (the ticket's QR code).
const AppCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self'; connect-src 'self' ws: wss:; object-src 'none'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Handler serves dist with a fallback to index.html for client routes.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err)
	}
	return handlerFS(sub)
}

func handlerFS(files fs.FS) http.Handler {
	fileServer := http.FileServerFS(files)
	index, _ := fs.ReadFile(files, "index.html")
	if index == nil {
		index = []byte(placeholder)
	}
	serveIndex := func(w http.ResponseWriter) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		_, _ = w.Write(index)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", AppCSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		p := r.URL.Path
		for _, pre := range reserved {
			if strings.HasPrefix(p, pre) {
				apperr.WriteHTTPCode(w, r, http.StatusNotFound, "NOT_FOUND", "no such endpoint", nil)
				return
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(path.Clean(p), "/")
		if name == "" || name == "index.html" {
			serveIndex(w)
			return
		}
		if st, err := fs.Stat(files, name); err == nil && !st.IsDir() {
			if strings.HasPrefix(name, "assets/") {
				w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			} else {
				w.Header().Set("Cache-Control", "public, max-age=3600")
			}
			fileServer.ServeHTTP(w, r)
			return
		}
		// A missing file (an asset, or anything with an extension) is a
		// real 404; any other path is a client route.
		if strings.HasPrefix(name, "assets/") || path.Ext(name) != "" {
			http.NotFound(w, r)
			return
		}
		serveIndex(w)
	})
}

const placeholder = `<!doctype html><meta charset="utf-8"><title>Ticketing</title>
<p>The web app is not built. Run <code>npm ci && npm run build</code> in <code>web/</code>.</p>`
