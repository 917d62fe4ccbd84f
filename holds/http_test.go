package holds_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/internal/apptest"
)

const httpSecret = "holds-http-test-secret-0123456789"

type gqlResp struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

func gql(t *testing.T, url, sub, query string, vars map[string]any) gqlResp {
	t.Helper()
	tok, err := auth.Mint(httpSecret, "ticketing-dev", "ticketing", sub, nil, time.Hour)
	require.NoError(t, err)
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out gqlResp
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	return out
}

const createHoldMutation = `mutation($in: CreateHoldInput!) {
  createHold(input: $in) { id status expiresAt total { amount currency } }
}`

// Through the real GraphQL endpoint: a race for one seat, then reading and
// cancelling the hold.
func TestHTTPCreateHold(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, map[string]string{"JWT_HS256_SECRET": httpSecret})
	srv := apptest.Serve(t, a)
	url := srv.URL + "/graphql"
	ev := createEvent(t, a.Pool, eventSpec{})
	seat := ev.Seats[0][4]

	var mu sync.Mutex
	var wins []string
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := gql(t, url, user(i).ID, createHoldMutation, map[string]any{"in": map[string]any{
				"eventId": ev.ID, "seatIds": []string{seat}, "idempotencyKey": key()}})
			if len(r.Errors) > 0 {
				assert.Equal(t, "SEAT_UNAVAILABLE", r.Errors[0].Extensions["code"], r.Errors[0].Message)
				assert.Equal(t, []any{seat}, r.Errors[0].Extensions["unavailableSeatIds"])
				return
			}
			mu.Lock()
			wins = append(wins, user(i).ID)
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.Len(t, wins, 1)
	winner := wins[0]

	r := gql(t, url, winner, createHoldMutation, map[string]any{"in": map[string]any{
		"eventId": ev.ID, "bestAvailable": map[string]any{"quantity": 2},
		"generalAdmission": []any{map[string]any{"sectionId": ev.GA, "quantity": 1}}, "idempotencyKey": key()}})
	require.Empty(t, r.Errors)
	var created struct {
		CreateHold struct {
			ID     string
			Status string
			Total  struct{ Amount int }
		}
	}
	require.NoError(t, json.Unmarshal(r.Data, &created))
	assert.Equal(t, "ACTIVE", created.CreateHold.Status)
	assert.Equal(t, 2*5000+2500, created.CreateHold.Total.Amount)
	id := created.CreateHold.ID

	const q = `query($id: ID!) { hold(id: $id) { id status event { id } items { section { id kind } seat { row number } price { amount } } order { id } } }`
	r = gql(t, url, winner, q, map[string]any{"id": id})
	require.Empty(t, r.Errors)
	var got struct {
		Hold struct {
			Status string
			Event  struct{ ID string }
			Items  []struct {
				Section struct{ ID, Kind string }
				Seat    *struct {
					Row    string
					Number int
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal(r.Data, &got))
	assert.Equal(t, ev.ID, got.Hold.Event.ID)
	require.Len(t, got.Hold.Items, 3)
	seated := 0
	for _, it := range got.Hold.Items {
		if it.Seat != nil {
			seated++
			assert.Equal(t, "A", it.Seat.Row)
		} else {
			assert.Equal(t, "GENERAL_ADMISSION", it.Section.Kind)
		}
	}
	assert.Equal(t, 2, seated)

	r = gql(t, url, "someone-else", q, map[string]any{"id": id})
	require.NotEmpty(t, r.Errors)
	assert.Equal(t, "FORBIDDEN", r.Errors[0].Extensions["code"])

	r = gql(t, url, winner, `mutation($id: ID!) { cancelHold(id: $id) { status } }`, map[string]any{"id": id})
	require.Empty(t, r.Errors)
	assert.JSONEq(t, `{"cancelHold":{"status":"CANCELLED"}}`, string(r.Data))
	r = gql(t, url, winner, `mutation($id: ID!) { cancelHold(id: $id) { status } }`, map[string]any{"id": id})
	require.NotEmpty(t, r.Errors)
	assert.Equal(t, "HOLD_EXPIRED", r.Errors[0].Extensions["code"])
}
