package payments_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/payments"
)

var (
	binDir    string
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildLog  []byte
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// ticketingBinary builds the ticketing command once per test binary.
func ticketingBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "paysim-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "ticketing")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Dir = ".." // the module root
		buildLog, buildErr = cmd.CombinedOutput()
	})
	require.NoError(t, buildErr, "go build: %s", buildLog)
	return binPath
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// TestPaysimAsSeparateProcess runs `ticketing paysim` as its own process and
// drives it only over HTTP, as the API does.
func TestPaysimAsSeparateProcess(t *testing.T) {
	t.Parallel()
	bin := ticketingBinary(t)
	addr := freeAddr(t)
	dbURL := testdb.NewDatabase(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "paysim")
	cmd.Env = append(os.Environ(),
		"PAYSIM_ADDR="+addr,
		"PAYSIM_DATABASE_URL="+dbURL,
		"DATABASE_URL="+dbURL,
		"PAYMENTS_WEBHOOK_SECRET="+testSecret,
		"PUBLIC_BASE_URL=http://shop.test",
	)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 50*time.Millisecond, "paysim did not start: %s", &logs)

	r := newReceiver(t)
	sb := payments.NewSandbox(base, testSecret, nil)
	ctx := context.Background()

	p, err := sb.CreatePayment(ctx, createReq(r, nil))
	require.NoError(t, err)
	require.Equal(t, base+"/checkout/"+p.ID, p.CheckoutURL)
	code, _ := checkout(t, p.CheckoutURL, "succeed")
	require.Equal(t, http.StatusOK, code)
	n := r.waitFor(t, 1)[0]
	require.Equal(t, payments.EventPaymentSucceeded, n.Type)
	require.Equal(t, p.ID, n.Payment.ID)

	// create_timeout through the real process: unknown outcome, then the
	// same key gives the same (single) payment.
	req := createReq(r, map[string]any{"create_timeout": true})
	impatient := payments.NewSandbox(base, testSecret, &http.Client{Timeout: 300 * time.Millisecond})
	_, err = impatient.CreatePayment(ctx, req)
	require.ErrorIs(t, err, payments.ErrUnknownOutcome)
	again, err := sb.CreatePayment(ctx, req)
	require.NoError(t, err)
	require.True(t, again.Replayed)

	// Graceful shutdown on SIGINT.
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	select {
	case err := <-exited:
		stopped = true
		require.NoError(t, err, "logs: %s", &logs)
	case <-time.After(20 * time.Second):
		t.Fatalf("paysim did not stop: %s", &logs)
	}
	require.True(t, strings.Contains(logs.String(), "paysim listening"))
}
