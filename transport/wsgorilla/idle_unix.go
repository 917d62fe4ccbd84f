//go:build unix

package wsgorilla

import (
	"net"
	"syscall"
)

// waitSocket parks until conn has bytes to read, EOF or an error, or its
// read deadline passes. The readiness is checked with a non-blocking
// MSG_PEEK, so a stale wake-up of the poller does not end the wait early
// (the caller would then park deep inside gorilla after all).
func waitSocket(conn net.Conn) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Only "nothing yet" waits; anything else (data, EOF, an error)
		// is NextReader's to read and report.
		return err != syscall.EAGAIN && err != syscall.EWOULDBLOCK
	})
}
