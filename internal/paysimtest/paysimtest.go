// Package paysimtest runs the sandbox payment provider for tests as a
// separate process with a database of its own, so that the code under test
// talks to it over HTTP only, as it would to a real processor.
package paysimtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ticketing/ticketing/internal/testdb"
)

// Server is a running sandbox provider.
type Server struct {
	// URL is its base address (PAYMENTS_BASE_URL).
	URL string
	// DatabaseURL is where it keeps its state (to count charges).
	DatabaseURL string
}

// Start builds the provider (orders/internal/paysimd), creates its
// database, starts it with webhookSecret and waits until it answers.
// Call it from TestMain; stop kills the process and drops the database.
func Start(webhookSecret string) (s Server, stop func(), err error) {
	var cleanups []func()
	stop = func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	dir, err := os.MkdirTemp("", "paysim-")
	if err != nil {
		return s, stop, err
	}
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "paysimd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/ticketing/ticketing/orders/internal/paysimd").CombinedOutput(); err != nil {
		return s, stop, fmt.Errorf("build paysimd: %v\n%s", err, out)
	}

	ctx := context.Background()
	dbName := "paysim_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	admin, err := pgx.Connect(ctx, testdb.BaseURL())
	if err != nil {
		return s, stop, err
	}
	cleanups = append(cleanups, func() { admin.Close(ctx) })
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+dbName); err != nil {
		return s, stop, err
	}
	cleanups = append(cleanups, func() { _, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)") })
	s.DatabaseURL = testdb.URLFor(dbName)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return s, stop, err
	}
	addr := l.Addr().String()
	l.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PAYSIM_ADDR="+addr, "PAYSIM_DATABASE_URL="+s.DatabaseURL,
		"PAYMENTS_WEBHOOK_SECRET="+webhookSecret, "PUBLIC_BASE_URL=http://shop.test")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return s, stop, err
	}
	cleanups = append(cleanups, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	s.URL = "http://" + addr

	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(s.URL + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, stop, nil
			}
		}
		if time.Now().After(deadline) {
			return s, stop, fmt.Errorf("paysim did not start: %s", logs.String())
		}
	}
}
