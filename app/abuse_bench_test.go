package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ticketing/ticketing/internal/fixtures"
)

// BenchmarkHostileRequests measures the server-side CPU time (ns/op) and
// memory (B/op) of refusing each hostile request of issue #16, through the
// real handler (real Postgres and Redis), called directly so the network
// is not counted:
//
//	go test -run '^$' -bench BenchmarkHostileRequests -benchmem ./app/
//
// Target: each refused in under 10 ms of CPU and 1 MB of memory.
func BenchmarkHostileRequests(b *testing.B) {
	tb := setupEnv(b, map[string]string{"ABUSE_LIMITS": "off"}) // refusals by the limits themselves are cheaper still
	big := fixtures.SmallEvent(b, tb.app.Pool, fixtures.EventOptions{Seats: 20000})
	h := tb.app.Handler()
	q := func(s string) string { v, _ := json.Marshal(map[string]string{"query": s}); return string(v) }
	var aliases strings.Builder
	aliases.WriteString("{ ")
	for i := range 20 {
		fmt.Fprintf(&aliases, `e%d: event(id: %q) { seatMap { seats { seatId status } } } `, i, big.ID)
	}
	aliases.WriteString("}")
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	cases := []struct{ name, body string }{
		{"Typename20000", q("# x\n{ " + strings.Repeat("__typename ", 20000) + "}")},
		{"Typename4000", q("{ " + strings.Repeat("__typename ", 4000) + "}")},
		{"ConflictingAliases700", q(`{ event(id:"x") { ` + strings.Repeat("a:id a:name ", 700) + "} }")},
		{"SeatMapAliases20", q(aliases.String())},
		{"ArrayBatch", `[` + strings.Repeat(`{"query":"{ __typename }"},`, 1000) + `{"query":"{ __typename }"}]`},
		{"DeepVariables", `{"query":"query($v: String) { __typename }","variables":` + deep + `}`},
		{"BadPersistedHash", `{"query":"{ __typename }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"00"}}}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(c.body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if !strings.Contains(rec.Body.String(), `"code"`) {
					b.Fatalf("not refused: %.200s", rec.Body.String())
				}
			}
		})
	}
}
