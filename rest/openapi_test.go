package rest_test

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/rest"
)

// testOpenAPI checks the served document against the route table, and the
// route table against the real handler: a route missing from the document,
// or documented but not served, fails.
func testOpenAPI(t *testing.T, e *env) {
	r := e.do("GET", "/api/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, rest.OpenAPI(), r.Body)
	var doc map[string]any
	r.into(t, &doc)
	require.Equal(t, "3.1.0", doc["openapi"])

	var documented, routed []string
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			documented = append(documented, strings.ToUpper(method)+" "+path)
			o := op.(map[string]any)
			require.NotEmpty(t, o["operationId"], "%s %s", method, path)
			require.NotEmpty(t, o["responses"], "%s %s", method, path)
		}
	}
	for _, rt := range rest.New(rest.Services{}).Routes() {
		routed = append(routed, rt.Method+" "+rt.Path)
	}
	sort.Strings(documented)
	sort.Strings(routed)
	require.Equal(t, routed, documented, "rest.Routes and rest/openapi.json disagree")

	// Every $ref resolves inside the document.
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				var node any = doc
				for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
					m, _ := node.(map[string]any)
					require.Contains(t, m, part, "dangling $ref %s", ref)
					node = m[part]
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)

	// Every route is served by the real handler: neither the mux's 405 nor
	// the catch-all's "no such endpoint".
	for _, rt := range routed {
		method, path, _ := strings.Cut(rt, " ")
		path = strings.NewReplacer("{eventId}", e.ev.ID, "{holdId}", uuid.NewString(), "{orderId}", uuid.NewString()).Replace(path)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, err := http.NewRequestWithContext(ctx, method, e.base+path, strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err, rt)
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		resp.Body.Close()
		cancel()
		require.NotEqual(t, http.StatusMethodNotAllowed, resp.StatusCode, rt)
		require.NotContains(t, string(buf[:n]), "no such endpoint", rt)
	}
}
