package recent

import (
	"sync"
	"testing"
	"time"
)

func TestLatencyAveragesAndForgets(t *testing.T) {
	var l Latency
	if d, n := l.Read(); d != 0 || n != 0 {
		t.Fatalf("zero value reads %v, %d", d, n)
	}
	l.Observe(100 * time.Millisecond)
	if d, _ := l.Read(); d != 100*time.Millisecond {
		t.Fatalf("first observation: %v", d)
	}
	for range 50 {
		l.Observe(300 * time.Millisecond)
	}
	if d, _ := l.Read(); d < 280*time.Millisecond || d > 300*time.Millisecond {
		t.Fatalf("after 50 observations of 300 ms: %v", d)
	}
	l.mu.Lock()
	l.at = time.Now().Add(-Stale - time.Millisecond)
	l.mu.Unlock()
	if d, _ := l.Read(); d != 0 {
		t.Fatalf("stale latency reads %v", d)
	}
	l.Observe(10 * time.Millisecond) // starts anew
	if d, _ := l.Read(); d != 10*time.Millisecond {
		t.Fatalf("after a quiet spell: %v", d)
	}
}

func TestLatencyConcurrent(t *testing.T) {
	var l Latency
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 1000 {
				l.Observe(time.Millisecond)
				l.Fail()
				l.Read()
			}
		})
	}
	wg.Wait()
	if _, n := l.Read(); n != 16000 {
		t.Fatalf("failures: %d, want 16000", n)
	}
}
