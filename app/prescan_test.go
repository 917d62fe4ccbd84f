package app

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/lexer"

	"github.com/ticketing/ticketing/redisstore"
)

// lexerTokens is what the parser's token limit counts: gqlparser's tokens
// before EOF or the first error, comments included (the parser consumes
// them with next(), which counts).
func lexerTokens(s string) int {
	l := lexer.New(&ast.Source{Input: s})
	n := 0
	for {
		tok, err := l.ReadToken()
		if err != nil || tok.Kind == lexer.EOF {
			return n
		}
		n++
	}
}

func scannerTokens(s string) int {
	c := newTokenCounter(1 << 30)
	for i := 0; i < len(s); i++ {
		c.feed(s[i])
	}
	return c.count()
}

var tokenSeeds = []string{
	"{ __typename }",
	"# random\n{ " + strings.Repeat("__typename ", 50) + "}",
	`query Q($id: ID!, $n: Int = -12, $f: Float = 1.5e-3) { event(id: $id) { a: id ...F ... on Event { name } } } fragment F on Event { id }`,
	`{ f(s: "a \"b\" \\ \u00e9 \u{1F600} \uD83D\uDE00", b: """block "" \""" quote""""", e: "") }`,
	"\uFEFF{ a }\uFEFF", "{ a }\xef\xbb", "\xef\xbb\xbf",
	`{ f(x: 0123) }`, `{ f(x: 1.) }`, `{ f(x: 1e) }`, `{ f(x: -) }`, `{ f(x: 1a 2.5E+10 0.0 -0) }`,
	`{ a } .. ...`, `"unterminated`, `"""unterminated""`, "\"line\nbreak\"", `"\u12"`, `"\u{}"`, `"\u{110000}"`, `"\u{D800}"`,
	`"\u{000000041}"`, `"\u{00000041}"`, "{ a\t,b\r\nc }", "'single'", "\x00", `"""a\"""b"""`, `"""\""x"""`,
	`""""""`, `"""""""`, `{ a(b: $c, d: [1, 2], e: {f: true}) @g | & = ! }`,
}

// FuzzTokenCount: the pre-decode scanner counts the tokens the real lexer
// reads, on the raw document, inside a JSON string (escapes decoded on
// the fly) and inside a query-string value (percent-decoded).
//
//	go test -run '^$' -fuzz FuzzTokenCount -fuzztime 60s ./app/
func FuzzTokenCount(f *testing.F) {
	for _, s := range tokenSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		require.Equal(t, lexerTokens(s), scannerTokens(s), "raw %q", s)

		quoted, _ := json.Marshal(s)
		var decoded string
		require.NoError(t, json.Unmarshal(quoted, &decoded))
		c := newTokenCounter(1 << 30)
		end := jsonString(quoted, 0, c.feed)
		require.Equal(t, len(quoted)-1, end)
		require.Equal(t, lexerTokens(decoded), c.count(), "JSON %s", quoted)

		c = newTokenCounter(1 << 30)
		percentDecode(url.QueryEscape(s), c.feed)
		require.Equal(t, lexerTokens(s), c.count(), "query string %q", s)
	})
}

func TestTokenCountSeeds(t *testing.T) {
	for _, s := range tokenSeeds {
		require.Equal(t, lexerTokens(s), scannerTokens(s), "%q", s)
	}
	// It can fail: a different count is seen.
	require.Equal(t, 3, scannerTokens("{ a }"))
	require.Equal(t, 2, scannerTokens(`"""a""" # b`))
	// The parser's own limit counts the same: a document of exactly
	// MaxQueryTokens tokens (comments among them) parses, one more does not.
	doc := "# c\n{ f(x: [" + strings.Repeat("1 ", MaxQueryTokens-11) + "]) # d\n}"
	require.Equal(t, MaxQueryTokens, scannerTokens(doc))
	require.Nil(t, CheckDocument(doc, false))
	require.NotNil(t, CheckDocument("# e\n"+doc, false))
}

func TestScanBody(t *testing.T) {
	over := "{ " + strings.Repeat("a ", MaxQueryTokens) + "}" // MaxQueryTokens+2 tokens
	under := "{ " + strings.Repeat("a ", MaxQueryTokens-2) + "}"
	q := func(key, doc string) string { b, _ := json.Marshal(doc); return `{"` + key + `":` + string(b) + `}` }
	code := func(body string) string {
		err := scanBody([]byte(body))
		if err == nil {
			return ""
		}
		return err.Extensions["code"].(string)
	}
	require.Equal(t, "GRAPHQL_PARSE_FAILED", code(q("query", over)))
	require.Equal(t, "", code(q("query", under)))
	require.Equal(t, "GRAPHQL_PARSE_FAILED", code(q("Query", over)), "keys match case-insensitively, as encoding/json matches them")
	require.Equal(t, "GRAPHQL_PARSE_FAILED", code(q(`\u0071uery`, over)))
	require.Equal(t, "", code(q("queryX", over)))
	require.Equal(t, "GRAPHQL_PARSE_FAILED", code(`{"query":"{ a }","variables":{"query":"x"}, "query":`+strings.TrimPrefix(q("x", over), `{"x":`)))
	require.Equal(t, "", code(`{"variables":{"query":`+strings.TrimPrefix(q("x", over), `{"x":`)+`}`), "a nested key is not the query")
	require.Equal(t, "", code(`{"operationName":"query","query":"{ a }"}`), "a value is not a key")
	require.Equal(t, "BAD_USER_INPUT", code(` [{"query":"{ a }"}]`))
	deep := func(n int) string {
		return `{"query":"{ a }","variables":` + strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) + `}`
	}
	require.Equal(t, "", code(deep(MaxJSONDepth-1)))
	require.Equal(t, "BAD_USER_INPUT", code(deep(MaxJSONDepth)))
	require.Equal(t, "", code(`{"query":"{ a }","variables":{"s":"{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{"}}`), "braces in strings do not nest")
	require.Equal(t, "", code(`not json`))

	require.Nil(t, scanQueryString("query="+url.QueryEscape(under)))
	require.NotNil(t, scanQueryString("query="+url.QueryEscape(over)))
	require.NotNil(t, scanQueryString("%71uery="+url.QueryEscape(over)))
	require.NotNil(t, scanQueryString("query=%7Ba%7D&variables="+url.QueryEscape(strings.Repeat("[", MaxJSONDepth+1))))
	require.Nil(t, scanQueryString("query=%7Ba%7D&variables="+url.QueryEscape(strings.Repeat("[", MaxJSONDepth))))
}

// The scan allocates nothing.
func TestScanBodyAllocates(t *testing.T) {
	body, _ := json.Marshal(map[string]string{"query": "# x\n{ " + strings.Repeat("__typename ", 20000) + "}"})
	deep := []byte(`{"query":"{ a }","variables":` + strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000) + `}`)
	require.Zero(t, testing.AllocsPerRun(5, func() {
		c := newTokenCounter(MaxQueryTokens)
		jsonString(body, len(`{"query":`), c.feed)
		var j jsonDepth
		for _, b := range deep {
			j.feed(b)
		}
	}))
}

// While Redis does not answer, the byte budget is kept by the instance.
func TestByteBudgetFallsBackToLocal(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = dead.Close() })
	b := &byteBudget{rl: redisstore.NewRateLimiter(dead, "test:")}
	now := time.Now()
	ctx := context.Background()
	require.Zero(t, b.spend(ctx, "10.0.0.1", BytesPerAddressBurst, now), "the whole budget")
	require.Positive(t, b.spend(ctx, "10.0.0.1", 1024, now), "then refused, by the local budget")
	require.Zero(t, b.spend(ctx, "10.0.0.2", 1024, now), "another address has its own")
	require.Zero(t, b.spend(ctx, "10.0.0.1", 1024, now.Add(time.Second)), "refilled")
}
