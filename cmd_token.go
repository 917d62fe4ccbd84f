package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/config"
)

// cmdToken prints a development token signed with JWT_HS256_SECRET:
// ticketing token --sub USER [--roles admin] [--ttl 1h].
func cmdToken(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sub := fs.String("sub", "", "the user id (required)")
	roles := fs.String("roles", "", "comma-separated roles, e.g. admin")
	ttl := fs.Duration("ttl", time.Hour, "lifetime of the token")
	if err := fs.Parse(args); err != nil {
		return exitCode(2)
	}
	if strings.TrimSpace(*sub) == "" {
		return errors.New("token: --sub is required")
	}
	if *ttl <= 0 {
		return errors.New("token: --ttl must be positive")
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	if cfg.JWTHS256Secret == "" {
		return errors.New("config: JWT_HS256_SECRET: must be set to mint development tokens (scripts/dev.sh keeps its own in data/dev.env: set -a; . data/dev.env; set +a)")
	}
	var rs []string
	for _, r := range strings.Split(*roles, ",") {
		if r = strings.TrimSpace(r); r != "" {
			rs = append(rs, r)
		}
	}
	tok, err := auth.Mint(cfg.JWTHS256Secret, cfg.JWTIssuer, cfg.JWTAudience, *sub, rs, *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}
