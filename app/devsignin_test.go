package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/config"
)

func TestDevSignInEnabled(t *testing.T) {
	const secret = "0123456789abcdef-dev"
	cases := []struct {
		secret, base, flag string
		want               bool
	}{
		{"", "http://127.0.0.1:8080", "true", false}, // no HS256 secret: never
		{secret, "http://127.0.0.1:8080", "", true},  // loopback default
		{secret, "http://localhost:5173", "", true},
		{secret, "http://[::1]:8080", "", true},
		{secret, "https://tickets.example", "", false},
		{secret, "https://tickets.example", "true", true},
		{secret, "http://127.0.0.1:8080", "false", false},
		{secret, "http://127.0.0.1:8080", "nonsense", false},
	}
	for _, c := range cases {
		if got := DevSignInEnabled(c.secret, c.base, c.flag); got != c.want {
			t.Errorf("DevSignInEnabled(%q, %q, %q) = %v, want %v", c.secret, c.base, c.flag, got, c.want)
		}
	}
}

func TestDevSubject(t *testing.T) {
	for in, want := range map[string]string{
		"Ana": "dev-ana", "  José Luis ": "dev-josé-luis", "a_b!!c": "dev-a-b-c", "": "", "!!!": "",
		strings.Repeat("x", 41): "",
	} {
		if got := devSubject(in); got != want {
			t.Errorf("devSubject(%q) = %q, want %q", in, got, want)
		}
	}
}

func devServer(t *testing.T, cfg config.Config) *httptest.Server {
	t.Helper()
	a := &App{Cfg: cfg}
	mux := http.NewServeMux()
	a.mountDevSignIn(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestDevTokenEndpoint(t *testing.T) {
	cfg := config.Config{JWTHS256Secret: "0123456789abcdef-dev", JWTIssuer: "ticketing-dev", JWTAudience: "ticketing", PublicBaseURL: "http://127.0.0.1:8080"}
	srv := devServer(t, cfg)

	res, err := http.Get(srv.URL + "/api/dev/config")
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ DevSignIn bool }
	_ = json.NewDecoder(res.Body).Decode(&c)
	res.Body.Close()
	if !c.DevSignIn {
		t.Fatal("dev sign-in should be on for a loopback PUBLIC_BASE_URL with an HS256 secret")
	}

	res, err = http.Post(srv.URL+"/api/dev/token", "application/json", strings.NewReader(`{"name":"Ana"}`))
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Token, Sub string }
	_ = json.NewDecoder(res.Body).Decode(&out)
	res.Body.Close()
	if res.StatusCode != 200 || out.Sub != "dev-ana" {
		t.Fatalf("status %d, sub %q", res.StatusCode, out.Sub)
	}
	v, err := auth.NewVerifier(authConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	u, err := v.Verify(out.Token)
	if err != nil || u.ID != "dev-ana" || u.IsAdmin() {
		t.Fatalf("minted token: user %+v, err %v", u, err)
	}

	if u.IsStaff() {
		t.Fatal("a token without a role asked for is not staff")
	}

	// The door staff's role on request; never admin.
	res, err = http.Post(srv.URL+"/api/dev/token", "application/json", strings.NewReader(`{"name":"Puerta","role":"staff"}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(res.Body).Decode(&out)
	res.Body.Close()
	if u, err = v.Verify(out.Token); err != nil || !u.IsStaff() || u.IsAdmin() {
		t.Fatalf("staff token: user %+v, err %v", u, err)
	}
	for _, body := range []string{`{"name":"  "}`, `{"name":"Ana","role":"admin"}`} {
		res, _ = http.Post(srv.URL+"/api/dev/token", "application/json", strings.NewReader(body))
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: status %d, want 400", body, res.StatusCode)
		}
	}
}

func TestDevTokenOffInProduction(t *testing.T) {
	srv := devServer(t, config.Config{JWTHS256Secret: "0123456789abcdef-dev", PublicBaseURL: "https://tickets.example"})
	res, err := http.Post(srv.URL+"/api/dev/token", "application/json", strings.NewReader(`{"name":"Ana"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d, want 404", res.StatusCode)
	}
}
