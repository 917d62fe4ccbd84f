package testdb

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// OwnCluster is a private Redis Cluster of primaries, each with one
// replica, on free ports (never the shared cluster of scripts/test.sh), for
// tests that move slots or fail a primary over. Its nodes time out after
// NodeTimeout, so a killed primary's replica takes over within a few
// seconds.
type OwnCluster struct {
	Nodes []*OwnRedis
	// Primaries are the addresses given to the cluster's clients.
	Primaries []string
}

// NodeTimeout is the cluster-node-timeout of an OwnCluster.
const NodeTimeout = 1000 * time.Millisecond

// StartOwnCluster starts primaries primaries and as many replicas and
// forms the cluster with redis-cli --cluster create; it is stopped when the
// test ends.
func StartOwnCluster(t testing.TB, primaries int) *OwnCluster {
	t.Helper()
	c := &OwnCluster{}
	var addrs []string
	for range 2 * primaries {
		// Each node its own directory: a replica's full sync renames the
		// received RDB to dump.rdb, which nodes sharing a directory share.
		dir := t.TempDir()
		n := startRedis(t, 0, "--cluster-enabled", "yes",
			"--cluster-node-timeout", strconv.Itoa(int(NodeTimeout/time.Millisecond)),
			"--cluster-config-file", dir+"/nodes.conf", "--dir", dir, "--logfile", dir+"/redis.log")
		n.Log = dir + "/redis.log"
		c.Nodes = append(c.Nodes, n)
		addrs = append(addrs, n.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	require.NoError(t, err, "redis-cli --cluster create: %s", out)
	c.Primaries = addrs[:primaries]
	require.Eventually(t, func() bool { return c.ok(t) }, 30*time.Second, 100*time.Millisecond,
		"the cluster never reached cluster_state:ok with every slot served")
	// A replica that has never synced refuses to fail over ("disconnected
	// from master for longer than allowed"): wait for every link.
	require.Eventually(t, func() bool {
		for _, n := range c.Nodes {
			if v, err := n.Do(t, "INFO", "replication"); err != nil ||
				(strings.Contains(fmt.Sprint(v), "role:slave") && !strings.Contains(fmt.Sprint(v), "master_link_status:up")) {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "a replica never synced with its primary")
	return c
}

// ok reports whether every node that is up says cluster_state:ok and knows
// its replicas are in sync enough to be listed.
func (c *OwnCluster) ok(t testing.TB) bool {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		info, err := n.Do(t, "CLUSTER", "INFO")
		if err != nil || !strings.Contains(fmt.Sprint(info), "cluster_state:ok") {
			return false
		}
	}
	return true
}

// WaitOK waits until every running node says the cluster is whole again.
func (c *OwnCluster) WaitOK(t testing.TB, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return c.ok(t) }, within, 100*time.Millisecond,
		"the cluster did not become whole again")
}

// Client is a cluster client of the cluster, closed when the test ends.
func (c *OwnCluster) Client(t testing.TB) *redis.ClusterClient {
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Primaries, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// node is one line of CLUSTER NODES.
type node struct {
	id, addr, master string
	flags            []string
	slots            [][2]int
}

func (n node) has(flag string) bool {
	for _, f := range n.flags {
		if f == flag {
			return true
		}
	}
	return false
}

// nodes is the cluster as the first running node sees it.
func (c *OwnCluster) nodes(t testing.TB) []node {
	t.Helper()
	for _, r := range c.Nodes {
		if !r.Running() {
			continue
		}
		v, err := r.Do(t, "CLUSTER", "NODES")
		if err != nil {
			continue
		}
		return parseNodes(fmt.Sprint(v))
	}
	t.Fatal("no node of the cluster is running")
	return nil
}

func (c *OwnCluster) byAddr(t testing.TB, addr string) *OwnRedis {
	t.Helper()
	for _, r := range c.Nodes {
		if r.Addr() == addr {
			return r
		}
	}
	t.Fatalf("no node %s", addr)
	return nil
}

// Owner is the primary that serves slot, as the cluster says.
func (c *OwnCluster) Owner(t testing.TB, slot int) *OwnRedis {
	t.Helper()
	n := c.OwnerNow(t, slot)
	if n == nil {
		t.Fatalf("no node serves slot %d", slot)
	}
	return n
}

// OwnerNow is the primary that serves slot, nil while none does (a failed
// primary not replaced yet).
func (c *OwnCluster) OwnerNow(t testing.TB, slot int) *OwnRedis {
	t.Helper()
	for _, n := range c.nodes(t) {
		if !n.has("master") || n.has("fail") || n.has("fail?") {
			continue
		}
		if n.serves(slot) {
			return c.byAddr(t, n.addr)
		}
	}
	return nil
}

// OtherPrimary is a running primary other than p.
func (c *OwnCluster) OtherPrimary(t testing.TB, p *OwnRedis) *OwnRedis {
	t.Helper()
	for _, n := range c.nodes(t) {
		if n.has("master") && !n.has("fail") && n.addr != p.Addr() {
			return c.byAddr(t, n.addr)
		}
	}
	t.Fatal("no other primary")
	return nil
}

// WaitAgree waits until every running node, replicas too, says owner
// serves slot: a slot just moved is known by gossip, and a replica promoted
// before it knows its primary's new slot would not take that slot over.
func (c *OwnCluster) WaitAgree(t testing.TB, slot int, owner *OwnRedis) {
	t.Helper()
	id := owner.ID(t)
	require.Eventually(t, func() bool {
		for _, r := range c.Nodes {
			if !r.Running() {
				continue
			}
			v, err := r.Do(t, "CLUSTER", "NODES")
			if err != nil {
				return false
			}
			agrees := false
			for _, n := range parseNodes(fmt.Sprint(v)) {
				agrees = agrees || (n.id == id && n.serves(slot))
			}
			if !agrees {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "the nodes do not agree that %s serves slot %d", owner.Addr(), slot)
}

// parseNodes reads the text of CLUSTER NODES.
func parseNodes(text string) []node {
	var out []node
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := node{id: f[0], addr: strings.SplitN(f[1], "@", 2)[0], master: f[3], flags: strings.Split(f[2], ",")}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated
			}
			lo, hi, found := strings.Cut(r, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if found {
				b, _ = strconv.Atoi(hi)
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		out = append(out, n)
	}
	return out
}

// serves reports whether n's slot ranges include slot.
func (n node) serves(slot int) bool {
	for _, r := range n.slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// Replica is the running replica of primary p.
func (c *OwnCluster) Replica(t testing.TB, p *OwnRedis) *OwnRedis {
	t.Helper()
	id := p.ID(t)
	for _, n := range c.nodes(t) {
		if n.has("slave") && n.master == id && !n.has("fail") {
			return c.byAddr(t, n.addr)
		}
	}
	t.Fatalf("primary %s has no replica", p.Addr())
	return nil
}

// MoveSlot migrates slot, and every key in it, from its owner to dst, the
// way redis-cli --cluster reshard does: IMPORTING/MIGRATING, MIGRATE in
// batches, then SETSLOT NODE on both and on every other primary.
func (c *OwnCluster) MoveSlot(t testing.TB, slot int, dst *OwnRedis) {
	t.Helper()
	src := c.Owner(t, slot)
	if src == dst {
		return
	}
	s := strconv.Itoa(slot)
	srcID, dstID := src.ID(t), dst.ID(t)
	dst.MustDo(t, "CLUSTER", "SETSLOT", s, "IMPORTING", srcID)
	src.MustDo(t, "CLUSTER", "SETSLOT", s, "MIGRATING", dstID)
	for {
		v := src.MustDo(t, "CLUSTER", "GETKEYSINSLOT", s, "100")
		keys, _ := v.([]any)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), "", "0", "5000", "REPLACE", "KEYS"}
		args = append(args, keys...)
		src.MustDo(t, args...)
	}
	// The destination first, then the source, then the other primaries,
	// as redis-cli does: the slot never has no owner.
	dst.MustDo(t, "CLUSTER", "SETSLOT", s, "NODE", dstID)
	src.MustDo(t, "CLUSTER", "SETSLOT", s, "NODE", dstID)
	for _, n := range c.Nodes {
		if n != src && n != dst && n.Running() && n.isPrimary(t) {
			n.MustDo(t, "CLUSTER", "SETSLOT", s, "NODE", dstID)
		}
	}
}

// Slot is the hash slot of key.
func (c *OwnCluster) Slot(t testing.TB, key string) int {
	t.Helper()
	v := c.Nodes[0].MustDo(t, "CLUSTER", "KEYSLOT", key)
	n, _ := v.(int64)
	return int(n)
}

// Kill stops node n at once (kill -9), as a crashed primary.
func (c *OwnCluster) Kill(n *OwnRedis) { n.Stop() }

// Promote waits up to within for the replica to be promoted by the
// cluster's own failover. If that has not happened, it logs the replica's
// view, replication info and log, and promotes it as an operator would,
// with CLUSTER FAILOVER TAKEOVER, so a test of the clients' recovery does
// not depend on the election. (The election failed when a replica had not
// yet synced with its primary; StartOwnCluster now waits for every link.)
// It reports whether the automatic failover did it.
func (c *OwnCluster) Promote(t testing.TB, slot int, replica *OwnRedis, within time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if c.OwnerNow(t, slot) == replica {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	v, _ := replica.Do(t, "CLUSTER", "NODES")
	info, _ := replica.Do(t, "INFO", "replication")
	log, _ := os.ReadFile(replica.Log)
	if len(log) > 4000 {
		log = log[len(log)-4000:]
	}
	t.Logf("no automatic failover within %s; the replica %s sees:\n%v\n%v\nits log ends:\n%s", within, replica.Addr(), v, info, log)
	replica.MustDo(t, "CLUSTER", "FAILOVER", "TAKEOVER")
	require.Eventually(t, func() bool { return c.OwnerNow(t, slot) == replica }, 30*time.Second, 100*time.Millisecond,
		"the replica was not promoted even by CLUSTER FAILOVER TAKEOVER")
	return false
}
