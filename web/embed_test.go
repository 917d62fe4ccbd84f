package web

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

func TestHandler(t *testing.T) {
	h := handlerFS(fstest.MapFS{
		"index.html":         {Data: []byte("<!doctype html><title>app</title>")},
		"favicon.svg":        {Data: []byte("<svg/>")},
		"assets/index-ab.js": {Data: []byte("console.log(1)")},
	})
	cases := []struct {
		method, path string
		status       int
		cache, body  string
	}{
		{"GET", "/", 200, "no-cache", "<title>app</title>"},
		{"GET", "/events/123", 200, "no-cache", "<title>app</title>"},
		{"GET", "/orders/abc", 200, "no-cache", "<title>app</title>"},
		{"GET", "/queue/e1", 200, "no-cache", "<title>app</title>"},
		{"GET", "/assets/index-ab.js", 200, "public, max-age=31536000, immutable", "console.log(1)"},
		{"GET", "/favicon.svg", 200, "public, max-age=3600", "<svg/>"},
		{"GET", "/assets/missing.js", 404, "", ""},
		{"GET", "/robots.txt", 404, "", ""},
		{"GET", "/api/nope", 404, "", "NOT_FOUND"},
		{"GET", "/webhooks/x", 404, "", "NOT_FOUND"},
		{"POST", "/events/1", 405, "", ""},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.status {
			t.Errorf("%s %s: status %d, want %d", c.method, c.path, rec.Code, c.status)
		}
		if c.cache != "" && rec.Header().Get("Cache-Control") != c.cache {
			t.Errorf("%s %s: Cache-Control %q, want %q", c.method, c.path, rec.Header().Get("Cache-Control"), c.cache)
		}
		if c.body != "" && !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("%s %s: body %q, want it to contain %q", c.method, c.path, rec.Body.String(), c.body)
		}
	}
}

func TestEmbeddedDistHasIndex(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "/assets/") {
		t.Fatalf("the committed web/dist should hold the built app (status %d)", rec.Code)
	}
}

func TestPlayground(t *testing.T) {
	h := Playground()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/playground", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `src="/playground/assets/`) {
		t.Fatalf("the committed web/playground/dist should hold the built Playground (status %d): %s", rec.Code, rec.Body.String())
	}
	if got := rec.Header().Get("Content-Security-Policy"); got != PlaygroundCSP {
		t.Fatalf("CSP %q", got)
	}
	asset := regexp.MustCompile(`/playground/assets/[^"]+\.js`).FindString(rec.Body.String())
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, asset, nil))
	if rec.Code != 200 || rec.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || !strings.Contains(rec.Header().Get("Content-Type"), "javascript") {
		t.Fatalf("%s: status %d, headers %v", asset, rec.Code, rec.Header())
	}
	for _, p := range []string{"/playground/assets/missing.js", "/playground/nope", "/playground/assets/"} {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if rec.Code != 404 {
			t.Errorf("%s: status %d, want 404", p, rec.Code)
		}
	}
}
