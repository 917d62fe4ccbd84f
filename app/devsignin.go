package app

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/config"
)

// Development sign-in: the web app lets a developer pick a name and get a
// token, so that two browser windows can act as two fans without a real
// identity provider.
//
//	GET  /api/dev/config          {"devSignIn": true|false}
//	POST /api/dev/token {"name", "role"?}  {"token", "sub", "expiresAt"}   (404 when off)
//
// It is on only when the server verifies HS256 development tokens
// (JWT_HS256_SECRET is set) AND either DEV_SIGNIN=true, or DEV_SIGNIN is
// unset and PUBLIC_BASE_URL is a loopback address (localhost, 127.0.0.0/8,
// ::1), which is what scripts/dev.sh runs. DEV_SIGNIN=false always turns it
// off. Minted tokens carry no role, or the door staff's ("role": "staff",
// for the /door page's checkIn), never admin; they last DevTokenTTL.

// DevTokenTTL is the lifetime of a development sign-in token.
const DevTokenTTL = 12 * time.Hour

// DevSignInEnabled decides whether development sign-in is on for cfg-like
// inputs: the HS256 secret, PUBLIC_BASE_URL and the DEV_SIGNIN variable.
func DevSignInEnabled(hs256Secret, publicBaseURL, devSignIn string) bool {
	return config.DevSignInOn(hs256Secret, publicBaseURL, devSignIn)
}

// devSubject turns a display name into the token subject "dev-<slug>", or ""
// when the name is unusable (empty, too long, or no letters or digits).
func devSubject(name string) string {
	name = strings.TrimSpace(name)
	if name == "" || len([]rune(name)) > 40 {
		return ""
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r): // accents kept (José, Zoë)
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	slug := strings.TrimSuffix(b.String(), "-")
	if slug == "" {
		return ""
	}
	return "dev-" + slug
}

// mountDevSignIn serves /api/dev/config always and /api/dev/token when
// development sign-in is on.
func (a *App) mountDevSignIn(mux *http.ServeMux) {
	enabled := DevSignInEnabled(a.Cfg.JWTHS256Secret, a.Cfg.PublicBaseURL, a.Cfg.DevSignIn)
	if enabled && a.Log != nil {
		a.Log.Warn("development sign-in is ON: POST /api/dev/token mints tokens for any name (set DEV_SIGNIN=false to disable)")
	}
	mux.HandleFunc("GET /api/dev/config", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		devWriteJSON(w, http.StatusOK, map[string]any{"devSignIn": enabled})
	})
	mux.HandleFunc("POST /api/dev/token", func(w http.ResponseWriter, r *http.Request) {
		if !enabled {
			apperr.WriteHTTPCode(w, r, http.StatusNotFound, "NOT_FOUND", "development sign-in is off", nil)
			return
		}
		var in struct {
			Name string `json:"name"`
			Role string `json:"role"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			apperr.WriteHTTPCode(w, r, http.StatusBadRequest, "BAD_USER_INPUT", "body must be JSON {\"name\": \"...\"}", nil)
			return
		}
		sub := devSubject(in.Name)
		if sub == "" {
			apperr.WriteHTTPCode(w, r, http.StatusBadRequest, "BAD_USER_INPUT", "name: 1 to 40 characters with at least one letter or digit", nil)
			return
		}
		var roles []string
		switch in.Role {
		case "":
		case "staff":
			roles = []string{"staff"}
		default:
			apperr.WriteHTTPCode(w, r, http.StatusBadRequest, "BAD_USER_INPUT", "role: only \"staff\" (or none)", nil)
			return
		}
		tok, err := auth.Mint(a.Cfg.JWTHS256Secret, a.Cfg.JWTIssuer, a.Cfg.JWTAudience, sub, roles, DevTokenTTL)
		if err != nil {
			apperr.WriteHTTPCode(w, r, http.StatusInternalServerError, "INTERNAL", "could not mint a token", nil)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		devWriteJSON(w, http.StatusOK, map[string]any{
			"token":     tok,
			"sub":       sub,
			"name":      strings.TrimSpace(in.Name),
			"expiresAt": time.Now().Add(DevTokenTTL).UTC().Format(time.RFC3339),
		})
	})
}

func devWriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
