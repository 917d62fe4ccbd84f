package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// gqlError is an expected failure answered by the API (extensions.code).
type gqlError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

func (e *gqlError) Error() string { return e.Code() + ": " + e.Message }

// Code is the contract's error code.
func (e *gqlError) Code() string { s, _ := e.Extensions["code"].(string); return s }

// codeOf is the error code of err, "TRANSPORT" for an answer we did not get
// (timeout, connection refused, 5xx without a GraphQL body), "" for nil.
func codeOf(err error) string {
	var g *gqlError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &g):
		return g.Code()
	}
	return "TRANSPORT"
}

// Client talks to the API over HTTP, alternating between base URLs.
type Client struct {
	HTTP *http.Client
	// Crowd carries the waiting room's calls (DoCrowd: joinQueue,
	// queueTicket, leaveQueue) on connections of their own. Every fan's
	// phone has its own connection, so an admitted buyer's hold never
	// waits on the client side behind other fans' joins; this process
	// cannot open 20,000 connections (the file descriptor limit), so it
	// keeps the two kinds of call from queueing behind each other in one
	// pool instead. With one pool of 256 connections, (b)'s 20,000 joins
	// in 5 s held the first holds in this process for 5-17 s, while the
	// server timed them at 0.2-0.5 s (bench/RESULTS.md, 2026-12-05).
	Crowd *http.Client
	Bases []string
	next  atomic.Uint64
}

// NewClient returns a client with two pooled transports (HTTP and Crowd)
// and a per-request timeout.
func NewClient(bases []string, timeout time.Duration) *Client {
	pool := func() *http.Client {
		return &http.Client{Timeout: timeout, Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 256,
			MaxConnsPerHost:     256,
			IdleConnTimeout:     60 * time.Second,
		}}
	}
	return &Client{HTTP: pool(), Crowd: pool(), Bases: bases}
}

// Base returns the next base URL (round robin).
func (c *Client) Base() string { return c.Bases[int(c.next.Add(1))%len(c.Bases)] }

// Do runs one GraphQL operation and decodes data into out.
func (c *Client) Do(ctx context.Context, token, query string, vars map[string]any, out any) error {
	return c.do(ctx, c.HTTP, token, query, vars, out)
}

// DoCrowd is Do on the waiting room's connections (Crowd).
func (c *Client) DoCrowd(ctx context.Context, token, query string, vars map[string]any, out any) error {
	return c.do(ctx, c.Crowd, token, query, vars, out)
}

func (c *Client) do(ctx context.Context, hc *http.Client, token, query string, vars map[string]any, out any) error {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base()+"/graphql", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []*gqlError     `json:"errors"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
	}
	if len(r.Errors) > 0 {
		if r.Errors[0].Code() == "" {
			return fmt.Errorf("graphql: %s", r.Errors[0].Message) // transport-like: no contract code
		}
		return r.Errors[0]
	}
	if out != nil {
		return json.Unmarshal(r.Data, out)
	}
	return nil
}

// PostForm posts a form (the provider's hosted checkout) and returns the
// status code.
func (c *Client) PostForm(ctx context.Context, u string, form url.Values) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// JSON sends a JSON request to a plain HTTP endpoint (paysim's faults).
func (c *Client) JSON(ctx context.Context, method, u string, in any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: HTTP %d: %.200s", method, u, resp.StatusCode, b)
	}
	return nil
}
