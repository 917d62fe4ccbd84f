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
	HTTP  *http.Client
	Bases []string
	next  atomic.Uint64
}

// NewClient returns a client with a pooled transport and a per-request
// timeout.
func NewClient(bases []string, timeout time.Duration) *Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 256,
		MaxConnsPerHost:     256,
		IdleConnTimeout:     60 * time.Second,
	}
	return &Client{HTTP: &http.Client{Transport: tr, Timeout: timeout}, Bases: bases}
}

// Base returns the next base URL (round robin).
func (c *Client) Base() string { return c.Bases[int(c.next.Add(1))%len(c.Bases)] }

// Do runs one GraphQL operation and decodes data into out.
func (c *Client) Do(ctx context.Context, token, query string, vars map[string]any, out any) error {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base()+"/graphql", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.HTTP.Do(req)
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
