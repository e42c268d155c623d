package target

import p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

// Idle timeouts: a table declared with support_timeout = true has
// IdleTimeoutBehavior NOTIFY_CONTROL in its P4Info; its entries take
// idle_timeout_ns and report time_since_last_hit when a read asks. Every
// hit records the Device's clock (microseconds); a server calls
// ExpiredEntries periodically to make IdleTimeoutNotifications.

// ExpiredEntries calls fn, per table with idle timeouts, with the entries
// whose TTL has passed since their last hit (key fields,
// controller_metadata, metadata and idle_timeout_ns set), and restarts
// their timers, as the specification asks.
func (d *Device) ExpiredEntries(fn func(tableID uint32, entries []*p4v1.TableEntry)) {
	type expired struct {
		id uint32
		es []*p4v1.TableEntry
	}
	var out []expired
	func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		now := d.now()
		for _, rt := range d.tables {
			if !rt.c.idle {
				continue
			}
			var es []*p4v1.TableEntry
			for _, e := range rt.sorted() {
				if e.idleNs <= 0 || int64(now-min(e.lastHit, now))*1000 < e.idleNs {
					continue
				}
				te := rt.entryProto(e, false)
				te.Action = nil
				es = append(es, te)
				e.lastHit = now
			}
			if len(es) > 0 {
				out = append(out, expired{rt.c.id, es})
			}
		}
	}()
	for _, x := range out {
		fn(x.id, x.es)
	}
}
