package middlebox

import (
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// A request and its response land on the same shard (the memory server's),
// whichever client sent it; different servers spread over the shards.
func TestShardOfFollowsTheServer(t *testing.T) {
	const n = 4
	seen := map[int]bool{}
	for s := 1; s <= 64; s++ {
		srv := [4]byte{10, 0, byte(s), 100}
		want := -1
		for c := 1; c <= 8; c++ {
			cli := [4]byte{10, 1, 0, byte(c)}
			req := buildFrame(t, &roce.Fields{SrcIP: cli, DstIP: srv, TTL: 64, Opcode: roce.OpRCReadRequest, DMALen: 8, PKey: 0xffff})
			rsp := buildFrame(t, &roce.Fields{SrcIP: srv, DstIP: cli, TTL: 64, Opcode: roce.OpRCAcknowledge, PKey: 0xffff})
			a, b := ShardOf(req, ClientSide, n), ShardOf(rsp, ServerSide, n)
			if a != b || a < 0 || a >= n || (want >= 0 && a != want) {
				t.Fatalf("server %v client %v: request shard %d, response shard %d, earlier %d", srv, cli, a, b, want)
			}
			want = a
		}
		seen[want] = true
	}
	if len(seen) != n {
		t.Fatalf("64 servers used only shards %v", seen)
	}
	if ShardOf([]byte{1, 2, 3}, ClientSide, n) != 0 {
		t.Fatal("short frame not on shard 0")
	}
}
