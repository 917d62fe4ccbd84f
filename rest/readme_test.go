package rest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeExample is the shell block of README.md between the rest-example
// markers.
func readmeExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "<!-- rest-example:start -->")
	require.True(t, ok, "README.md has no rest-example:start marker")
	block, _, ok := strings.Cut(rest, "<!-- rest-example:end -->")
	require.True(t, ok, "README.md has no rest-example:end marker")
	block = strings.TrimSpace(block)
	require.True(t, strings.HasPrefix(block, "```sh\n") && strings.HasSuffix(block, "\n```"), "the example is one ```sh block")
	return strings.TrimSuffix(strings.TrimPrefix(block, "```sh\n"), "```")
}

// testREADME runs the README's curl session verbatim with bash against the
// real server, as a user with a fresh token.
func testREADME(t *testing.T, e *env) {
	cmd := exec.Command("bash", "-c", readmeExample(t))
	cmd.Env = append(os.Environ(), "BASE="+e.base, "TOKEN="+e.token("readme"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "README example failed:\n%s", out)
	require.Contains(t, string(out), "CONFIRMED")
	t.Logf("README example:\n%s", out)
}
