package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// errStreamEnded: the server completed the subscription (or sent an
// error) before the buyer saw what it waited for.
var errStreamEnded = errors.New("subscription ended")

// Subscribe runs one GraphQL subscription over graphql-transport-ws, as the
// web app does (connection_init carries the bearer token), and hands each
// payload's data to on until on returns true (then nil), the server ends
// the stream (errStreamEnded, or the error it sent), the connection fails
// or ctx ends.
func (c *Client) Subscribe(ctx context.Context, token, query string, vars map[string]any, on func(data json.RawMessage) bool) error {
	ws := "ws" + strings.TrimPrefix(c.Base(), "http") + "/graphql"
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 10 * time.Second}
	conn, _, err := d.DialContext(ctx, ws, nil)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	init := map[string]any{"type": "connection_init"}
	if token != "" {
		init["payload"] = map[string]any{"Authorization": "Bearer " + token}
	}
	if err := conn.WriteJSON(init); err != nil {
		return err
	}
	if err := conn.WriteJSON(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": query, "variables": vars}}); err != nil {
		return err
	}
	for {
		var msg struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := conn.ReadJSON(&msg); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		switch msg.Type {
		case "ping":
			_ = conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"pong"}`))
		case "next":
			var p struct {
				Data   json.RawMessage `json:"data"`
				Errors []*gqlError     `json:"errors"`
			}
			if err := json.Unmarshal(msg.Payload, &p); err != nil {
				return fmt.Errorf("subscription payload: %w", err)
			}
			if len(p.Errors) > 0 {
				return p.Errors[0]
			}
			if on(p.Data) {
				return nil
			}
		case "error":
			var errs []*gqlError
			if json.Unmarshal(msg.Payload, &errs) == nil && len(errs) > 0 {
				return errs[0]
			}
			return errStreamEnded
		case "complete":
			return errStreamEnded
		}
	}
}

// subscribe runs the buyer's subscription when a stream slot is free
// (-streams): errNoStream when none is, and the buyer polls instead.
func (b *buyer) subscribe(ctx context.Context, query string, vars map[string]any, on func(data json.RawMessage) bool) error {
	select {
	case b.r.streams <- struct{}{}:
		defer func() { <-b.r.streams }()
	default:
		b.r.S.Count("streams unavailable (-streams): polled", 1)
		return errNoStream
	}
	return b.r.C.Subscribe(ctx, b.token, query, vars, on)
}

// errNoStream: every stream slot of the run was taken.
var errNoStream = errors.New("no stream slot free")
