package paysim

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
)

var checkoutPage = template.Must(template.New("checkout").Parse(`<!doctype html>
<html lang="es">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pago / Checkout · paysim</title>
<link rel="icon" href="data:,">
<style>
*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:grid;place-items:center;background:#f3f4f6;font:16px/1.5 system-ui,sans-serif;color:#111827;padding:1rem}
main{background:#fff;border-radius:12px;box-shadow:0 4px 24px #0001;padding:clamp(1rem,5vw,2rem);width:100%;max-width:24rem;min-width:0}
.brand{margin:0;color:#4b5563;font-size:.85rem;letter-spacing:.05em;text-transform:uppercase}
h1{margin:.5rem 0;font-size:clamp(1.6rem,8vw,2.2rem);overflow-wrap:anywhere}
.ref{color:#374151;overflow-wrap:anywhere}
form{display:flex;flex-wrap:wrap;gap:.75rem;margin-top:1.5rem}
button{flex:1 1 8rem;padding:.8rem;border:0;border-radius:8px;font-size:1rem;cursor:pointer;min-height:3rem}
.pay{background:#15803d;color:#fff}.decline{background:#e5e7eb;color:#111827}
.status{margin-top:1.5rem;padding:.8rem;border-radius:8px;background:#f3f4f6}
.note{margin-top:1.5rem;color:#4b5563;font-size:.8rem}
</style>
</head>
<body>
<main>
<p class="brand">paysim · sandbox</p>
<h1>{{.Amount}}</h1>
<p class="ref">Referencia / Reference: <code>{{.Reference}}</code></p>
{{if .Message}}<p class="status">{{.Message}}</p>{{end}}
{{if .Pending}}
<form method="post">
<button class="pay" name="outcome" value="succeed">Pagar / Pay</button>
<button class="decline" name="outcome" value="decline">Rechazar / Decline</button>
</form>
{{else}}
<p class="status">Estado / Status: <strong>{{.Status}}</strong></p>
{{end}}
<p class="note">Entorno de pruebas: no se mueve dinero real. Sandbox: no real money moves.</p>
</main>
</body>
</html>
`))

// zeroDecimal lists common currencies without minor units.
var zeroDecimal = map[string]bool{"JPY": true, "KRW": true, "VND": true, "CLP": true, "ISK": true, "XOF": true, "XAF": true, "PYG": true}

func formatAmount(amount int64, currency string) string {
	if zeroDecimal[currency] {
		return fmt.Sprintf("%d %s", amount, currency)
	}
	return fmt.Sprintf("%d.%02d %s", amount/100, amount%100, currency)
}

func (s *Server) renderPage(w http.ResponseWriter, status int, p payment, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = checkoutPage.Execute(w, map[string]any{
		"Amount": formatAmount(p.Amount, p.Currency), "Reference": p.Reference,
		"Pending": p.Status == "pending", "Status": p.Status, "Message": msg,
	})
}

func wantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

func (s *Server) handleCheckoutPage(w http.ResponseWriter, r *http.Request) {
	p, err := s.getPayment(r.Context(), r.PathValue("id"))
	if errors.Is(err, errNotFound) {
		http.Error(w, "Pago no encontrado / Payment not found", http.StatusNotFound)
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	s.renderPage(w, http.StatusOK, p, "")
}

// handleCheckoutSettle is the buyer's choice (form field outcome = succeed
// or decline). Browsers (Accept: text/html) are redirected with 303 to the
// payment's return_url, else to a return_url form or query parameter under
// PublicBaseURL, else to PublicBaseURL, with payment_id and status added to
// the query; other clients get the payment as JSON: 200 when this request
// settled it, 409 payment_not_pending (nothing changed) otherwise.
func (s *Server) handleCheckoutSettle(w http.ResponseWriter, r *http.Request) {
	outcome := r.FormValue("outcome")
	if outcome != "succeed" && outcome != "decline" {
		s.fail(w, invalid("outcome", "want succeed or decline"))
		return
	}
	p, changed, err := s.settle(r.Context(), r.PathValue("id"), outcome)
	if err != nil {
		s.fail(w, err)
		return
	}
	if changed {
		s.notify()
	}
	if wantsHTML(r) {
		if target := s.returnURL(r, p); target != "" {
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		}
		msg := ""
		if !changed {
			msg = "Este pago ya estaba resuelto; no ha cambiado nada. / This payment was already settled; nothing changed."
		}
		s.renderPage(w, http.StatusOK, p, msg)
		return
	}
	if !changed {
		s.fail(w, notPending(p, "settle"))
		return
	}
	writeJSON(w, http.StatusOK, p.view())
}

// returnURL is where a browser goes back after the checkout, or "".
func (s *Server) returnURL(r *http.Request, p payment) string {
	target := p.ReturnURL
	if target == "" {
		if q := r.FormValue("return_url"); q != "" && s.underPublicBase(q) {
			target = q
		}
	}
	if target == "" {
		target = s.opt.PublicBaseURL
	}
	if target == "" {
		return ""
	}
	u, err := url.Parse(target)
	if err != nil {
		return ""
	}
	q := u.Query()
	q.Set("payment_id", p.ID)
	q.Set("status", p.Status)
	u.RawQuery = q.Encode()
	return u.String()
}

// underPublicBase reports whether target is PublicBaseURL or below it, so
// that an unauthenticated query parameter cannot make an open redirect.
func (s *Server) underPublicBase(target string) bool {
	base := s.opt.PublicBaseURL
	if base == "" {
		return false
	}
	return target == base || strings.HasPrefix(target, base+"/") || strings.HasPrefix(target, base+"?")
}
