package ycsb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// TraceRecord is one operation line of the basic binding's output, parsed
// in place: Table, Key and Body are views into the line and are valid only
// until the line's buffer is reused.
type TraceRecord struct {
	Type  OpType
	Table []byte
	Key   []byte
	// ScanCount is the record count of a SCAN.
	ScanCount int
	// Body is the text between "[ " and the final "]" (fields for READ and
	// SCAN, field=value pairs for UPDATE and INSERT); empty for DELETE.
	Body []byte
	// Fields is the number of fields named in Body (0 for "<all fields>").
	Fields int
	// ValueBytes is the total length of the values of UPDATE and INSERT.
	ValueBytes int
}

// ErrNotOp is returned by ParseTraceLine for a line that is not an operation
// (YCSB's property dump, status and summary lines).
var ErrNotOp = errors.New("ycsb: not an operation line")

// DefaultFieldPrefix is CoreWorkload's fieldnameprefix default.
const DefaultFieldPrefix = "field"

var (
	verbRead   = []byte("READ ")
	verbUpdate = []byte("UPDATE ")
	verbInsert = []byte("INSERT ")
	verbScan   = []byte("SCAN ")
	verbDelete = []byte("DELETE ")
	allFields  = []byte("<all fields>")
)

// ParseTraceLine parses one line printed by YCSB's BasicDB (without its line
// terminator). It returns ErrNotOp for lines that do not start with an
// operation verb, and a descriptive error for an operation line that is
// malformed. It allocates nothing.
//
// Values in UPDATE and INSERT lines are YCSB random bytes (32..127) and may
// contain spaces, '=' and ']'; pairs are therefore split at " <prefix><digits>="
// boundaries with the default field prefix "field", and the body ends at the
// line's final "]".
func ParseTraceLine(line []byte, rec *TraceRecord) error {
	line = bytes.TrimRight(line, "\r")
	*rec = TraceRecord{}
	var rest []byte
	switch {
	case bytes.HasPrefix(line, verbRead):
		rec.Type, rest = OpRead, line[len(verbRead):]
	case bytes.HasPrefix(line, verbUpdate):
		rec.Type, rest = OpUpdate, line[len(verbUpdate):]
	case bytes.HasPrefix(line, verbInsert):
		rec.Type, rest = OpInsert, line[len(verbInsert):]
	case bytes.HasPrefix(line, verbScan):
		rec.Type, rest = OpScan, line[len(verbScan):]
	case bytes.HasPrefix(line, verbDelete):
		rec.Type, rest = OpDelete, line[len(verbDelete):]
	default:
		return ErrNotOp
	}
	var ok bool
	if rec.Table, rest, ok = cutWord(rest); !ok {
		return fmt.Errorf("ycsb: trace %s: missing table", rec.Type)
	}
	if rec.Type == OpDelete {
		rec.Key = rest
		if len(rec.Key) == 0 || bytes.IndexByte(rec.Key, ' ') >= 0 {
			return fmt.Errorf("ycsb: trace DELETE: bad key %q", rec.Key)
		}
		return nil
	}
	if rec.Key, rest, ok = cutWord(rest); !ok {
		return fmt.Errorf("ycsb: trace %s: missing key", rec.Type)
	}
	if rec.Type == OpScan {
		var n []byte
		if n, rest, ok = cutWord(rest); !ok {
			return fmt.Errorf("ycsb: trace SCAN: missing record count")
		}
		c, ok := parseCount(n)
		if !ok {
			return fmt.Errorf("ycsb: trace SCAN: bad record count %q", n)
		}
		rec.ScanCount = c
	}
	// rest must be "[ " body "]".
	if len(rest) < 3 || rest[0] != '[' || rest[1] != ' ' || rest[len(rest)-1] != ']' {
		return fmt.Errorf("ycsb: trace %s %s: fields not in [ ... ]", rec.Type, rec.Key)
	}
	rec.Body = rest[2 : len(rest)-1]
	switch rec.Type {
	case OpRead, OpScan:
		if bytes.Equal(rec.Body, allFields) {
			return nil
		}
		for b := rec.Body; len(b) > 0; {
			var f []byte
			if f, b, ok = cutWord(b); !ok || len(f) == 0 {
				return fmt.Errorf("ycsb: trace %s %s: bad field list %q", rec.Type, rec.Key, rec.Body)
			}
			rec.Fields++
		}
	case OpUpdate, OpInsert:
		return parsePairs(rec)
	}
	return nil
}

// parsePairs counts "fieldN=value " pairs and their value bytes.
func parsePairs(rec *TraceRecord) error {
	b := rec.Body
	if len(b) == 0 {
		return nil // values == null prints "[ ]"
	}
	if !isFieldStart(b, 0) {
		return fmt.Errorf("ycsb: trace %s %s: body does not start with a field=value pair", rec.Type, rec.Key)
	}
	for len(b) > 0 {
		eq := bytes.IndexByte(b, '=')
		// the value runs to the next " fieldN=" or to the end, minus the
		// trailing space BasicDB appends after every pair.
		end := len(b)
		for i := eq + 1; i < len(b); i++ {
			if b[i] == ' ' && isFieldStart(b, i+1) {
				end = i + 1
				break
			}
		}
		if end < 1 || b[end-1] != ' ' {
			return fmt.Errorf("ycsb: trace %s %s: pair not followed by a space", rec.Type, rec.Key)
		}
		rec.Fields++
		rec.ValueBytes += end - 1 - (eq + 1)
		b = b[end:]
	}
	return nil
}

// isFieldStart reports whether b[i:] starts with "<prefix><digits>=".
func isFieldStart(b []byte, i int) bool {
	if !bytes.HasPrefix(b[i:], []byte(DefaultFieldPrefix)) {
		return false
	}
	j := i + len(DefaultFieldPrefix)
	k := j
	for k < len(b) && b[k] >= '0' && b[k] <= '9' {
		k++
	}
	return k > j && k < len(b) && b[k] == '='
}

// parseCount parses a non-negative decimal int without allocating.
func parseCount(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// cutWord splits at the first space: word, the rest after the space.
func cutWord(b []byte) (word, rest []byte, ok bool) {
	i := bytes.IndexByte(b, ' ')
	if i < 0 {
		return b, nil, len(b) > 0
	}
	return b[:i], b[i+1:], i > 0
}

// KeyID maps a YCSB key name to the 8-byte store key: "user<n>" (any zero
// padding) gives n, as Workload.RecordKey does, so a trace and a generated
// stream name the same keys; any other name gives FNV-1a 64 of its bytes.
func KeyID(name []byte) uint64 {
	if d, ok := bytes.CutPrefix(name, []byte("user")); ok && len(d) > 0 && len(d) <= 20 {
		var v uint64
		valid := true
		for _, c := range d {
			if c < '0' || c > '9' {
				valid = false
				break
			}
			nv := v*10 + uint64(c-'0')
			if nv/10 != v {
				valid = false // overflow
				break
			}
			v = nv
		}
		if valid {
			return v
		}
	}
	h := uint64(fnvOffsetBasis64)
	for _, c := range name {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return h
}

// TraceReader reads operation lines from a YCSB basic-binding log, skipping
// every other line.
type TraceReader struct {
	sc   *bufio.Scanner
	line int
	rec  TraceRecord
	err  error
}

// NewTraceReader reads from r; lines may be up to 16 MiB long.
func NewTraceReader(r io.Reader) *TraceReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	return &TraceReader{sc: sc}
}

// Next returns the next operation record, valid until the following call,
// or false at the end or on error (see Err).
func (t *TraceReader) Next() (*TraceRecord, bool) {
	for t.err == nil && t.sc.Scan() {
		t.line++
		err := ParseTraceLine(t.sc.Bytes(), &t.rec)
		if err == ErrNotOp {
			continue
		}
		if err != nil {
			t.err = fmt.Errorf("line %d: %w", t.line, err)
			return nil, false
		}
		return &t.rec, true
	}
	if t.err == nil {
		t.err = t.sc.Err()
	}
	return nil, false
}

// Err is the first error met, nil at a clean end of input.
func (t *TraceReader) Err() error { return t.err }

// Line is the number of the last line read (1-based).
func (t *TraceReader) Line() int { return t.line }

// TraceSource turns a trace into Ops (Key from KeyID; KeyNum is -1 since a
// trace carries no key numbers).
type TraceSource struct {
	R *TraceReader
}

// NewTraceSource reads a YCSB basic-binding log from r.
func NewTraceSource(r io.Reader) *TraceSource { return &TraceSource{R: NewTraceReader(r)} }

// Next implements Source.
func (s *TraceSource) Next(op *Op) bool {
	rec, ok := s.R.Next()
	if !ok {
		return false
	}
	*op = Op{Type: rec.Type, KeyNum: -1, Key: KeyID(rec.Key), ScanLen: rec.ScanCount, ValueLen: rec.ValueBytes}
	return true
}

// Err is the reader's error.
func (s *TraceSource) Err() error { return s.R.Err() }
