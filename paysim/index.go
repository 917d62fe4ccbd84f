package paysim

import (
	"html/template"
	"net/http"
	"time"
)

// The page at GET /: what a developer opening paysim's address (as
// scripts/dev.sh prints it) wants to see: the latest payments, each with its
// checkout page, and where the API, the faults and the metrics are.
var indexPage = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>paysim · sandbox payment provider</title>
<link rel="icon" href="data:,">
<style>
*{box-sizing:border-box}
body{margin:0;padding:1rem;background:#f3f4f6;font:15px/1.5 system-ui,sans-serif;color:#111827}
main{max-width:60rem;margin:0 auto;background:#fff;border-radius:12px;box-shadow:0 4px 24px #0001;padding:clamp(1rem,4vw,2rem)}
h1{margin:0 0 .25rem;font-size:1.6rem}
.muted{color:#4b5563}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;margin-top:1rem;font-size:.9rem}
th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid #e5e7eb;white-space:nowrap}
code{font-size:.85em}
</style>
</head>
<body>
<main>
<h1>paysim</h1>
<p class="muted">The sandbox payment provider: no real money moves. API: <code>POST /v1/payments</code>, <code>GET /v1/payments/{id}</code>,
<code>POST /v1/payments/{id}/cancel</code>, <code>POST /v1/refunds</code>; faults: <a href="/v1/faults"><code>GET /v1/faults</code></a>;
<a href="/metrics">metrics</a>; <a href="/healthz">health</a>.</p>
<h2>Latest payments ({{len .}})</h2>
{{if .}}<div class="scroll"><table>
<thead><tr><th scope="col">created</th><th scope="col">payment</th><th scope="col">status</th><th scope="col">amount</th><th scope="col">reference</th></tr></thead>
<tbody>{{range .}}<tr><td>{{.Created.UTC.Format "2006-01-02 15:04:05"}}</td><td><a href="{{.CheckoutURL}}">{{.ID}}</a></td><td>{{.Status}}</td><td>{{.Amount}}</td><td><code>{{.Reference}}</code></td></tr>
{{end}}</tbody></table></div>{{else}}<p>None yet: buy something in the web app.</p>{{end}}
</main>
</body>
</html>
`))

type indexRow struct {
	ID, Status, Amount, Reference, CheckoutURL string
	Created                                    time.Time
}

func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	rows, err := s.pool.Query(r.Context(), `SELECT `+paymentCols+` FROM paysim.payments ORDER BY created_at DESC, id LIMIT 50`)
	if err != nil {
		s.fail(w, err)
		return
	}
	defer rows.Close()
	var list []indexRow
	for rows.Next() {
		p, err := scanPayment(rows)
		if err != nil {
			s.fail(w, err)
			return
		}
		list = append(list, indexRow{p.ID, p.Status, formatAmount(p.Amount, p.Currency), p.Reference, p.CheckoutURL, p.Created})
	}
	if err := rows.Err(); err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = indexPage.Execute(w, list)
}
