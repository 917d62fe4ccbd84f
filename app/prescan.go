package app

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/ticketing/ticketing/apperr"
)

// The pre-decode check: before a request's JSON is decoded or its document
// parsed, its raw bytes are scanned once, without allocating, for the two
// limits whose refusal would otherwise cost the most: the GraphQL tokens of
// the query (MaxQueryTokens, counted as gqlparser's parser counts them, JSON
// or URL escapes decoded on the fly) and the JSON nesting of the body or of
// GET's variables (MaxJSONDepth). On POST, GET, SSE and WebSocket
// subscribe. A refusal has the code the later check would give: too many
// tokens is GRAPHQL_PARSE_FAILED (raised through DocumentLimits, so each
// transport answers it as it answers a parse failure), deep JSON and array
// batches are BAD_USER_INPUT. Anything the scan does not understand is left
// to the decoder and the parser.

// MaxJSONDepth is the deepest JSON nesting of a request body (or of GET's
// variables and extensions): objects and arrays, the body's own braces
// included. The contract's inputs nest a few levels.
const MaxJSONDepth = 32

// tokenCounter counts GraphQL tokens fed one byte at a time, as
// gqlparser's lexer reads them, comments included (the parser's token limit
// counts them too). It stops at the first byte the lexer would refuse, or
// once it has counted more than max.
type tokenCounter struct {
	n, max int
	st     lexState
	k      int    // digits of an escape, quotes of a run
	v      uint32 // value of a braced \u{...} escape
}

type lexState uint8

const (
	lxSpace lexState = iota
	lxBOM1
	lxBOM2
	lxDot1
	lxDot2
	lxComment
	lxName
	lxMinus    // after '-': a digit must follow
	lxZero     // a leading 0: no digit may follow
	lxInt      // integer digits
	lxDot      // after the '.' of a number: a digit must follow
	lxFrac     // fraction digits
	lxExp      // after e/E
	lxExpSign  // after the exponent's sign: a digit must follow
	lxExpDigit // exponent digits
	lxQuote1   // '"'
	lxQuote2   // '""': a block string if a third follows, else an empty string
	lxString
	lxEscape // after '\' in a string
	lxU      // after \u
	lxU4     // k hex digits of \uXXXX read
	lxUBrace // k hex digits of \u{...} read, value v
	lxBlock
	lxBlockQuotes // k quotes in a row in a block string
	lxBlockEscape // '\' and k quotes after it (\""" is an escape)
	lxDone        // refused byte or over max: nothing more is counted
)

func newTokenCounter(max int) tokenCounter { return tokenCounter{max: max} }

func (c *tokenCounter) token() {
	c.n++
	c.st = lxSpace
	if c.n > c.max {
		c.st = lxDone
	}
}

// pick is a if cond, else b.
func pick(cond bool, a, b lexState) lexState {
	if cond {
		return a
	}
	return b
}

func isNameByte(b byte) bool {
	return b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func hexVal(b byte) (uint32, bool) {
	switch {
	case '0' <= b && b <= '9':
		return uint32(b - '0'), true
	case 'a' <= b && b <= 'f':
		return uint32(b - 'a' + 10), true
	case 'A' <= b && b <= 'F':
		return uint32(b - 'A' + 10), true
	}
	return 0, false
}

// feed takes the next byte of the document.
func (c *tokenCounter) feed(b byte) {
	for {
		switch c.st {
		case lxDone:
		case lxSpace:
			switch {
			case b == ' ' || b == '\t' || b == ',' || b == '\n' || b == '\r':
			case b == 0xEF:
				c.st = lxBOM1
			case strings.IndexByte("!$&():=@[]{}|", b) >= 0:
				c.token()
			case b == '.':
				c.st = lxDot1
			case b == '#':
				c.st = lxComment
			case b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z':
				c.st = lxName
			case b == '-':
				c.st = lxMinus
			case b == '0':
				c.st = lxZero
			case isDigit(b):
				c.st = lxInt
			case b == '"':
				c.st = lxQuote1
			default:
				c.st = lxDone
			}
		case lxBOM1:
			c.st = pick(b == 0xBB, lxBOM2, lxDone)
		case lxBOM2:
			c.st = pick(b == 0xBF, lxSpace, lxDone)
		case lxDot1:
			c.st = pick(b == '.', lxDot2, lxDone)
		case lxDot2:
			if b != '.' {
				c.st = lxDone
				return
			}
			c.token()
		case lxComment:
			if b >= 0x20 || b == '\t' {
				return
			}
			c.token()
			continue
		case lxName:
			if isNameByte(b) {
				return
			}
			c.token()
			continue
		case lxMinus:
			switch {
			case b == '0':
				c.st = lxZero
			case isDigit(b):
				c.st = lxInt
			default:
				c.st = lxDone
			}
		case lxZero, lxInt:
			switch {
			case isDigit(b) && c.st == lxZero:
				c.st = lxDone
			case isDigit(b):
			case b == '.':
				c.st = lxDot
			case b == 'e' || b == 'E':
				c.st = lxExp
			default:
				c.token()
				continue
			}
		case lxDot:
			c.st = pick(isDigit(b), lxFrac, lxDone)
		case lxFrac:
			switch {
			case isDigit(b):
			case b == 'e' || b == 'E':
				c.st = lxExp
			default:
				c.token()
				continue
			}
		case lxExp:
			switch {
			case b == '+' || b == '-':
				c.st = lxExpSign
			case isDigit(b):
				c.st = lxExpDigit
			default:
				c.st = lxDone
			}
		case lxExpSign:
			c.st = pick(isDigit(b), lxExpDigit, lxDone)
		case lxExpDigit:
			if isDigit(b) {
				return
			}
			c.token()
			continue
		case lxQuote1:
			if b == '"' {
				c.st = lxQuote2
				return
			}
			c.st = lxString
			continue
		case lxQuote2:
			if b == '"' {
				c.st = lxBlock
				return
			}
			c.token() // ""
			continue
		case lxString:
			switch {
			case b == '"':
				c.token()
			case b == '\\':
				c.st = lxEscape
			case b < 0x20 && b != '\t':
				c.st = lxDone
			}
		case lxEscape:
			switch {
			case b == 'u':
				c.st = lxU
			case strings.IndexByte(`"/\bfnrt`, b) >= 0:
				c.st = lxString
			default:
				c.st = lxDone
			}
		case lxU:
			if b == '{' {
				c.st, c.k, c.v = lxUBrace, 0, 0
				return
			}
			c.st, c.k = lxU4, 0
			continue
		case lxU4:
			if _, ok := hexVal(b); !ok {
				c.st = lxDone
				return
			}
			if c.k++; c.k == 4 {
				c.st = lxString
			}
		case lxUBrace:
			d, ok := hexVal(b)
			switch {
			case b == '}' && c.k > 0 && (c.v < 0xD800 || 0xDFFF < c.v && c.v <= utf8.MaxRune):
				c.st = lxString
			case !ok || c.k == 8:
				c.st = lxDone
			default:
				c.v, c.k = c.v<<4|d, c.k+1
			}
		case lxBlock:
			switch {
			case b == '"':
				c.st, c.k = lxBlockQuotes, 1
			case b == '\\':
				c.st, c.k = lxBlockEscape, 0
			case b < 0x20 && b != '\t' && b != '\n' && b != '\r':
				c.st = lxDone
			}
		case lxBlockQuotes:
			if b == '"' {
				c.k++
				return
			}
			if c.k >= 3 {
				c.token()
			} else {
				c.st = lxBlock
			}
			continue
		case lxBlockEscape:
			if b == '"' {
				if c.k++; c.k == 3 {
					c.st = lxBlock // \""" is an escaped """
				}
				return
			}
			c.st = lxBlock // a plain backslash; fewer than three quotes never close
			continue
		}
		return
	}
}

// count ends the document and returns its tokens (at most max+1).
func (c *tokenCounter) count() int {
	switch c.st {
	case lxComment, lxName, lxZero, lxInt, lxFrac, lxExpDigit, lxQuote2:
		c.token()
	case lxBlockQuotes:
		if c.k >= 3 {
			c.token()
		}
	}
	c.st = lxDone
	return c.n
}

// jsonDepth follows the nesting of JSON fed one byte at a time (strings
// skipped). It does not validate: the decoder does.
type jsonDepth struct {
	depth, deepest int
	inString, esc  bool
}

func (j *jsonDepth) feed(b byte) {
	switch {
	case j.esc:
		j.esc = false
	case j.inString:
		j.esc = b == '\\'
		j.inString = b != '"'
	case b == '"':
		j.inString = true
	case b == '{' || b == '[':
		j.depth++
		j.deepest = max(j.deepest, j.depth)
	case b == '}' || b == ']':
		j.depth--
	}
}

// jsonString decodes the JSON string starting at body[i] (a '"'), giving
// its bytes to emit; it returns the index of the closing quote (len(body)
// if there is none). Escapes are decoded as encoding/json decodes them.
func jsonString(body []byte, i int, emit func(byte)) int {
	var buf [utf8.UTFMax]byte
	for i++; i < len(body); i++ {
		b := body[i]
		switch {
		case b == '"':
			return i
		case b != '\\':
			emit(b)
			continue
		}
		if i+1 >= len(body) {
			return len(body)
		}
		i++
		switch body[i] {
		case 'b':
			emit('\b')
		case 'f':
			emit('\f')
		case 'n':
			emit('\n')
		case 'r':
			emit('\r')
		case 't':
			emit('\t')
		case 'u':
			r, ok := hex4(body, i+1)
			if !ok {
				return len(body) // not JSON: left to the decoder
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(body, i+3); ok && i+2 < len(body) && body[i+1] == '\\' && body[i+2] == 'u' {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r, i = d, i+6
					}
				}
			}
			for _, c := range buf[:utf8.EncodeRune(buf[:], r)] {
				emit(c)
			}
		default: // " \ / and anything else as itself
			emit(body[i])
		}
	}
	return len(body)
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var v uint32
	for _, c := range b[i : i+4] {
		d, ok := hexVal(c)
		if !ok {
			return 0, false
		}
		v = v<<4 | d
	}
	return rune(v), true
}

// scanBody checks a JSON request body (POST, SSE, a WebSocket subscribe
// payload): an array (a batch) or nesting deeper than MaxJSONDepth is
// BAD_USER_INPUT; a "query" of more than MaxQueryTokens tokens is
// GRAPHQL_PARSE_FAILED. Keys are matched as encoding/json matches them
// (case-insensitively); every "query" member is counted.
func scanBody(body []byte) *gqlerror.Error {
	start := 0
	for start < len(body) && strings.IndexByte(" \t\r\n", body[start]) >= 0 {
		start++
	}
	if start < len(body) && body[start] == '[' {
		return badInput("a JSON array of operations (batching) is not supported")
	}
	if start >= len(body) || body[start] != '{' {
		return nil
	}
	var (
		j        jsonDepth
		isKey    = false // the next string at depth 1 is a key
		isQuery  = false // the last key was "query"
		key      [8]byte
		tokens   *gqlerror.Error
		counting tokenCounter
	)
	for i := start; i < len(body); i++ {
		b := body[i]
		if j.depth == 1 && !j.inString {
			switch b {
			case '{', '[':
				isKey = false
			case ',':
				isKey = true
			case '"':
				if isKey {
					n := 0
					i = jsonString(body, i, func(c byte) {
						if n < len(key) {
							key[n] = c
						}
						n++
					})
					isQuery = n == len("query") && bytes.EqualFold(key[:n], []byte("query"))
					isKey = false
					continue
				}
				if isQuery {
					counting = newTokenCounter(MaxQueryTokens)
					i = jsonString(body, i, counting.feed)
					if counting.count() > MaxQueryTokens && tokens == nil {
						tokens = tokenLimitError()
					}
					isQuery = false
					continue
				}
			}
		}
		j.feed(b)
		if j.depth == 1 && b == '{' && !j.inString {
			isKey = true
		}
		if j.deepest > MaxJSONDepth {
			return deepJSONError()
		}
	}
	return tokens
}

// scanQueryString checks GET's parameters: query (tokens), variables and
// extensions (nesting), percent-decoded on the fly.
func scanQueryString(raw string) *gqlerror.Error {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(k, "%+") && len(k) <= 32 {
			k, _ = url.QueryUnescape(k)
		}
		switch {
		case k == "query":
			c := newTokenCounter(MaxQueryTokens)
			if percentDecode(v, c.feed); c.count() > MaxQueryTokens {
				return tokenLimitError()
			}
		case k == "variables" || k == "extensions":
			var j jsonDepth
			if percentDecode(v, j.feed); j.deepest > MaxJSONDepth {
				return deepJSONError()
			}
		}
	}
	return nil
}

// percentDecode gives the bytes of a query-string value as url.ParseQuery
// decodes them; it stops at a malformed escape (ParseQuery refuses it).
func percentDecode(s string, emit func(byte)) {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; b {
		case '+':
			emit(' ')
		case '%':
			if i+2 >= len(s) {
				return
			}
			h, ok1 := hexVal(s[i+1])
			l, ok2 := hexVal(s[i+2])
			if !ok1 || !ok2 {
				return
			}
			emit(byte(h<<4 | l))
			i += 2
		default:
			emit(b)
		}
	}
}

func tokenLimitError() *gqlerror.Error {
	err := gqlerror.Errorf("exceeded token limit of %d", MaxQueryTokens)
	errcode.Set(err, errcode.ParseFailed)
	return err
}

func deepJSONError() *gqlerror.Error {
	return badInput(fmt.Sprintf("the request's JSON nests deeper than %d levels", MaxJSONDepth))
}

func badInput(msg string) *gqlerror.Error {
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": "BAD_USER_INPUT"}}
}

type prescanKey struct{}

// prescanError is the refusal the pre-decode check left for DocumentLimits
// to raise (so each transport answers it in its own way).
func prescanError(ctx context.Context) *gqlerror.Error {
	err, _ := ctx.Value(prescanKey{}).(*gqlerror.Error)
	return err
}

// prescan applies the pre-decode check to an HTTP /graphql request (POST and
// SSE bodies, GET's query string; a WebSocket's messages are checked by its
// transport). A BAD_USER_INPUT refusal is answered here (400, as the decoder
// answered it); a token refusal goes on with an empty request carrying the
// error, which DocumentLimits raises before anything is parsed.
func prescan(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err *gqlerror.Error
		switch {
		case r.Method == http.MethodGet:
			err = scanQueryString(r.URL.RawQuery)
		case r.Method == http.MethodPost:
			if b, ok := r.Body.(*readBody); ok {
				err = scanBody(b.data)
			}
		}
		if err == nil {
			next.ServeHTTP(w, r)
			return
		}
		if err.Extensions["code"] == "BAD_USER_INPUT" {
			apperr.WriteHTTPCode(w, r, http.StatusBadRequest, "BAD_USER_INPUT", err.Message, nil)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), prescanKey{}, err))
		if r.Method == http.MethodGet {
			u := *r.URL
			u.RawQuery = ""
			r.URL = &u
		} else {
			r.Body, r.ContentLength = newReadBody([]byte("{}")), 2
		}
		next.ServeHTTP(w, r)
	})
}

// readBody is a request body limitBody has read in full: the pre-decode
// check scans its bytes without reading them again.
type readBody struct {
	*bytes.Reader
	data []byte
}

func newReadBody(b []byte) *readBody { return &readBody{Reader: bytes.NewReader(b), data: b} }

func (*readBody) Close() error { return nil }
