//go:build !unix

package wsgorilla

import "net"

// waitSocket returns at once: the reader then parks in NextReader.
func waitSocket(net.Conn) {}
