package testbed

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/swordbox/swordbox/testbed/ycsb"
)

func TestCloverChunks(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		keys, valueSize, thread int
		want                    int    // chunks, if no error
		err                     string // part of the error
	}{
		{"the racks' default", 1024, 128, 240, DefaultCloverChunks, ""},
		{"many threads", 1024, 128, 4096, DefaultCloverChunks, ""},                                 // 4096 x 64 x 192 B = 48 MiB
		{"the largest key count", 1 << 20, 128, 240, (192*(2<<20+2*240*32) + 1<<20 - 1) >> 20, ""}, // 192-byte slots
		{"large values", 1024, 4072, 480, 128, ""},                                                 // 4096 B x (2 x 1024 + 2 x 480 x 32) = 128 MiB
		{"too many large values", 1 << 20, 4072, 240, 0, "more than the 1024 MiB a Clover LH addresses"},
		{"a value no slab class holds", 1024, 16384, 1, 0, "larger than the largest slab class"},
		{"no keys", 0, 128, 1, 0, "at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CloverChunks(tc.keys, tc.valueSize, tc.thread)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("CloverChunks(%d, %d, %d) = %d, %v; want an error with %q", tc.keys, tc.valueSize, tc.thread, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("CloverChunks(%d, %d, %d) = %d, %v; want %d", tc.keys, tc.valueSize, tc.thread, got, err, tc.want)
			}
			if err := CloverLayout(tc.keys, got).Validate(); err != nil {
				t.Errorf("its layout: %v", err)
			}
		})
	}
}

// TestCloverChunksMostKeys: the key count the error names as the most that
// fits does fit, and a few more than the exact bound do not.
func TestCloverChunksMostKeys(t *testing.T) {
	for _, vs := range []int{1000, 2000, 4072} { // 1,048,576 such values never fit
		_, err := CloverChunks(1<<20, vs, 240)
		if err == nil {
			t.Fatalf("%d-byte values: 1048576 keys fit", vs)
		}
		var most int
		msg := err.Error()
		i := strings.Index(msg, "at most about ")
		if i < 0 {
			t.Fatalf("%d-byte values: %v names no most", vs, err)
		}
		if _, err := fmt.Sscan(msg[i+len("at most about "):], &most); err != nil {
			t.Fatal(err)
		}
		if _, err := CloverChunks(most, vs, 240); err != nil {
			t.Errorf("%d-byte values: %d keys, named as fitting: %v", vs, most, err)
		}
		slot, err := cloverSlot(vs)
		if err != nil {
			t.Fatal(err)
		}
		over := most + (4<<20)/(2*slot)
		if _, err := CloverChunks(over, vs, 240); err == nil {
			t.Errorf("%d-byte values: %d keys fit, more than the %d named", vs, over, most)
		}
	}
}

// TestCheckCells: suites whose cells no rack can hold are refused before
// anything runs, and the cells that fit pass.
func TestCheckCells(t *testing.T) {
	slots, err := SwitchKeySlots(ArchV1Model)
	if err != nil {
		t.Fatal(err)
	}
	base := SuiteConfig{Scenario: ScenarioDefault, Keys: 1024, ValueSize: 128, Threads: 240, ClientHosts: 7,
		Duration: time.Second, Workloads: []ycsb.Kind{ycsb.WorkloadA}, Modes: []string{ModeOff, ModeWriteRead}}
	for _, tc := range []struct {
		name string
		edit func(*SuiteConfig)
		err  string
	}{
		{"the default", func(*SuiteConfig) {}, ""},
		{"every key steered, as many as the switch holds", func(c *SuiteConfig) { c.Keys = slots }, ""},
		{"every key steered, more than the switch holds", func(c *SuiteConfig) { c.Keys = slots + 1 },
			fmt.Sprintf("cell a write+read: steers %d keys, the switch program has %d key slots", slots+1, slots)},
		{"more keys than the switch holds, unsteered", func(c *SuiteConfig) { c.Keys, c.Modes = 1<<20, []string{ModeOff} }, ""},
		{"partial, the hottest keys the switch holds", func(c *SuiteConfig) {
			c.Scenario, c.Keys, c.Sweep = ScenarioPartial, 1<<20, []string{"8", fmt.Sprint(slots)}
		}, ""},
		{"partial, all of more keys than the switch holds", func(c *SuiteConfig) {
			c.Scenario, c.Keys, c.Sweep = ScenarioPartial, 1<<20, []string{"8", "all"}
		}, "cell a tracked=all write+read: steers 1048576 keys"},
		{"object sizes a region cannot hold", func(c *SuiteConfig) {
			c.Scenario, c.Keys, c.Modes, c.Sweep = ScenarioSize, 1<<20, []string{ModeOff}, []string{"128", "3000"}
		}, "cell a size=3000 off: clover region: 1048576 keys of 3000-byte values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			cells, err := c.Cells()
			if tc.err == "" {
				if err != nil || len(cells) == 0 {
					t.Fatalf("%d cells, %v", len(cells), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%d cells, %v; want an error with %q", len(cells), err, tc.err)
			}
		})
	}
}
