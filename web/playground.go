package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// The GraphQL Playground (GraphiQL), built from web/playground by `npm run
// build` into web/playground/dist (committed, like dist) and served at
// /playground. It loads nothing from another origin, so it works offline.
//
//go:embed all:playground/dist
var playgroundDist embed.FS

// PlaygroundCSP is the Content-Security-Policy of /playground and its
// assets: scripts and styles from this origin only, no eval, no framing.
// GraphiQL needs two things the web app does not: inline style attributes
// (React and CodeMirror set them; 'unsafe-inline' in style-src) and its
// editor fonts, which its stylesheet carries as data: URIs (font-src).
// Handlers set it themselves, so a global security-header middleware that
// keeps a header a handler already set leaves it alone.
const PlaygroundCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self' ws: wss:; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Playground serves GET /playground (the page) and /playground/assets/...
func Playground() http.Handler {
	sub, err := fs.Sub(playgroundDist, "playground/dist")
	if err != nil {
		panic(err)
	}
	return playgroundFS(sub)
}

func playgroundFS(files fs.FS) http.Handler {
	index, _ := fs.ReadFile(files, "index.html")
	if index == nil {
		index = []byte(playgroundPlaceholder)
	}
	assets := http.StripPrefix("/playground/", http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", PlaygroundCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		switch p := r.URL.Path; {
		case p == "/playground" || p == "/playground/" || p == "/playground/index.html":
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			_, _ = w.Write(index)
		case strings.HasPrefix(p, "/playground/assets/") && !strings.HasSuffix(p, "/"):
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
			assets.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

const playgroundPlaceholder = `<!doctype html><meta charset="utf-8"><title>Playground</title>
<p>The Playground is not built. Run <code>npm install && npm run build</code> in <code>web/</code>.</p>`
