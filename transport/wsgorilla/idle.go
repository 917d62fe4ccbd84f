package wsgorilla

import (
	"bufio"
	"net"
	"net/http"
)

// An idle connection's reader goroutine is most of what a quiet subscriber
// costs: parked inside gorilla's NextReader (frame parsing, bufio, net.Conn,
// the poller) it keeps a 4 KiB stack. So it first waits for the socket to
// become readable through syscall.RawConn, a shallow call; the garbage
// collector then shrinks its stack to the 2 KiB minimum, and NextReader only
// runs once a message is there.
//
// That wait must not miss bytes gorilla has already buffered, so the
// connection's read buffer is one of ours (whose Buffered() can be asked):
// handed to gorilla as the hijacked reader, which it adopts as is.

// readBufferSize is the connection's read buffer: gorilla adopts a
// hijacked reader only if it is larger than 256 bytes, and client messages
// are small. 288 bytes is an allocation size class.
const readBufferSize = 288

// hijacker gives gorilla's Upgrade a read buffer of ours.
type hijacker struct {
	http.ResponseWriter
	br *bufio.Reader
}

func (h *hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil || brw.Reader.Buffered() > 0 {
		return conn, brw, err // gorilla refuses data before the handshake
	}
	h.br = bufio.NewReaderSize(conn, readBufferSize)
	return conn, bufio.NewReadWriter(h.br, brw.Writer), nil
}

// waitReadable returns once a message may be read without blocking: bytes
// are buffered, or the socket is readable (or closed, or past its read
// deadline: NextReader then reports it).
func (c *connection) waitReadable() {
	if c.br == nil || c.br.Buffered() > 0 {
		return
	}
	waitSocket(c.ws.NetConn())
}
