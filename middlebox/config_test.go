package middlebox

import (
	"strings"
	"testing"
	"time"
)

// TestConfigValidate checks that every refusal names the field at fault,
// and that a valid configuration (defaults filled in) passes.
func TestConfigValidate(t *testing.T) {
	base := func() Config {
		return Config{Servers: []ServerConfig{{IP: "10.0.0.2", Remap: []Range{{}}, CASToWrite: []Range{{Lo: 0x1000, Hi: 0x1008}}}},
			Words: []WordConfig{{VA: 0x1000}}}
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"ring-size", func(c *Config) { c.RingSize = 1000 }, "ring-size 1000"},
		{"conn-ring-size", func(c *Config) { c.ConnRingSize = 3 }, "conn-ring-size 3"},
		{"window", func(c *Config) { c.Window = 1 << 21 }, "window 2097152"},
		{"replay-log-bytes not a power of two", func(c *Config) { c.ReplayLogBytes = 5000 }, "replay-log-bytes 5000"},
		{"replay-log-bytes too small", func(c *Config) { c.ReplayLogBytes = 2048 }, "replay-log-bytes 2048"},
		{"replay-log-bytes ok", func(c *Config) { c.ReplayLogBytes = 1 << 20 }, ""},
		{"pmtu", func(c *Config) { c.PMTU = 1500 }, "pmtu 1500"},
		{"nak-recovery", func(c *Config) { c.NAKRecovery = "retry" }, `nak-recovery "retry"`},
		{"max-conns", func(c *Config) { c.MaxConns = -1 }, "max-conns -1: want 1..1048576 (0: default 4096)"},
		{"max-words", func(c *Config) { c.MaxWords = 1<<24 + 1 }, "max-words 16777217: want 1..16777216 (0: default 16384)"},
		// A negative holdoff was taken (no holdoff at all), an hour one too.
		{"replay-holdoff negative", func(c *Config) { c.ReplayHoldoff = -time.Second }, "replay-holdoff -1s: want 1µs..1s (0: default 1ms)"},
		{"replay-holdoff long", func(c *Config) { c.ReplayHoldoff = time.Hour }, "replay-holdoff 1h0m0s: want 1µs..1s"},
		{"replay-holdoff ok", func(c *Config) { c.ReplayHoldoff = time.Second }, ""},
		{"server ip", func(c *Config) { c.Servers[0].IP = "10.0.0" }, "servers[0]"},
		{"cas outside remap", func(c *Config) { c.Servers[0].Remap = []Range{{Lo: 0, Hi: 0x100}} }, "not inside a remap range"},
		{"word unaligned", func(c *Config) { c.Words[0].VA = 0x1001 }, "words[0] VA 0x1001"},
		{"answer-at-send with broadcast", func(c *Config) { c.Servers[0].AnswerAtSend, c.NAKRecovery = true, NAKBroadcast }, "answer-at-send needs nak-recovery"},
		{"answer-at-send ok", func(c *Config) { c.Servers[0].AnswerAtSend = true }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.edit(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want an error naming %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not name %q", err, tc.want)
			}
			if tc.want == "" {
				if _, err := New(c); err != nil {
					t.Fatalf("New: %v", err)
				}
			}
		})
	}
}

// TableBytes counts what the engine allocates as it learns: the
// connection tables grow with the window and the steering maps with their
// slots.
func TestTableBytes(t *testing.T) {
	small := Config{}
	wide := Config{Window: 1 << 20}
	steer := Config{Steering: &SteerConfig{Mode: "write", NodeSize: 152, NodeSlots: 1 << 24, AddrSlots: 1 << 24, CASSlots: 1 << 24}}
	if s, w := small.TableBytes(), wide.TableBytes(); s <= 0 || w < s+int64(DefaultMaxConns)*(1<<20-DefaultWindow)*8 {
		t.Errorf("window 2^20 over %d conns: %d bytes, default: %d", DefaultMaxConns, w, s)
	}
	if s, st := small.TableBytes(), steer.TableBytes(); st < s+3<<24*8 {
		t.Errorf("steering slots 3 x 2^24: %d bytes, without steering: %d", st, s)
	}
}
