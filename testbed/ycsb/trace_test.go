package ycsb

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestParseTraceLine(t *testing.T) {
	for _, tc := range []struct {
		line    string
		want    TraceRecord
		wantErr string // "" ok, "notop", or a substring of the error
	}{
		{line: "READ usertable user6284781860667377211 [ field0 ]",
			want: TraceRecord{Type: OpRead, Table: []byte("usertable"), Key: []byte("user6284781860667377211"), Body: []byte("field0 "), Fields: 1}},
		{line: "READ usertable user1 [ <all fields>]",
			want: TraceRecord{Type: OpRead, Table: []byte("usertable"), Key: []byte("user1"), Body: []byte("<all fields>")}},
		{line: "READ usertable user1 [ field0 field3 ]\r",
			want: TraceRecord{Type: OpRead, Table: []byte("usertable"), Key: []byte("user1"), Body: []byte("field0 field3 "), Fields: 2}},
		{line: "UPDATE usertable user7 [ field0=ab c=d]e field1=xyz ]",
			want: TraceRecord{Type: OpUpdate, Table: []byte("usertable"), Key: []byte("user7"), Body: []byte("field0=ab c=d]e field1=xyz "), Fields: 2, ValueBytes: 11}},
		{line: "INSERT usertable user9 [ field0=" + strings.Repeat("x", 100) + " ]",
			want: TraceRecord{Type: OpInsert, Table: []byte("usertable"), Key: []byte("user9"), Body: []byte("field0=" + strings.Repeat("x", 100) + " "), Fields: 1, ValueBytes: 100}},
		{line: "UPDATE usertable user7 [ ]",
			want: TraceRecord{Type: OpUpdate, Table: []byte("usertable"), Key: []byte("user7"), Body: []byte{}}},
		{line: "UPDATE usertable user7 [ field0=  ]",
			want: TraceRecord{Type: OpUpdate, Table: []byte("usertable"), Key: []byte("user7"), Body: []byte("field0=  "), Fields: 1, ValueBytes: 1}},
		{line: "SCAN usertable user5 17 [ <all fields>]",
			want: TraceRecord{Type: OpScan, Table: []byte("usertable"), Key: []byte("user5"), ScanCount: 17, Body: []byte("<all fields>")}},
		{line: "DELETE usertable user5",
			want: TraceRecord{Type: OpDelete, Table: []byte("usertable"), Key: []byte("user5")}},
		{line: "***************** properties *****************", wantErr: "notop"},
		{line: "\"recordcount\"=\"1000\"", wantErr: "notop"},
		{line: "[READ], Operations, 1000", wantErr: "notop"},
		{line: "", wantErr: "notop"},
		{line: "READ usertable", wantErr: "missing key"},
		{line: "READ usertable user1", wantErr: "fields not in"},
		{line: "READ usertable user1 [ field0", wantErr: "fields not in"},
		{line: "READ  user1 [ field0 ]", wantErr: "missing table"},
		{line: "SCAN usertable user5 x [ <all fields>]", wantErr: "bad record count"},
		{line: "SCAN usertable user5 -1 [ <all fields>]", wantErr: "bad record count"},
		{line: "UPDATE usertable user7 [ value ]", wantErr: "does not start"},
		{line: "UPDATE usertable user7 [ field0=abc]", wantErr: "not followed by a space"},
		{line: "DELETE usertable user5 extra", wantErr: "bad key"},
		{line: "DELETE usertable ", wantErr: "bad key"},
	} {
		var rec TraceRecord
		err := ParseTraceLine([]byte(tc.line), &rec)
		switch {
		case tc.wantErr == "notop":
			if !errors.Is(err, ErrNotOp) {
				t.Errorf("%q: err %v, want ErrNotOp", tc.line, err)
			}
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err %v, want %q", tc.line, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.line, err)
		default:
			if rec.Type != tc.want.Type || !bytes.Equal(rec.Table, tc.want.Table) || !bytes.Equal(rec.Key, tc.want.Key) ||
				!bytes.Equal(rec.Body, tc.want.Body) || rec.Fields != tc.want.Fields || rec.ValueBytes != tc.want.ValueBytes ||
				rec.ScanCount != tc.want.ScanCount {
				t.Errorf("%q:\n got %+v\nwant %+v", tc.line, rec, tc.want)
			}
		}
	}
}

func TestKeyID(t *testing.T) {
	for _, tc := range []struct {
		name string
		want uint64
	}{
		{"user0", 0}, {"user123", 123}, {"user00042", 42}, {"user18446744073709551615", 18446744073709551615},
	} {
		if got := KeyID([]byte(tc.name)); got != tc.want {
			t.Errorf("KeyID(%q) = %d, want %d", tc.name, got, tc.want)
		}
	}
	// Not user<n>: hashed, distinct.
	a, b := KeyID([]byte("user18446744073709551616")), KeyID([]byte("alice"))
	if a == b || a == 0 {
		t.Errorf("hashed names collide: %d %d", a, b)
	}
}

// A log as YCSB's basic binding prints it (property dump, operations, status).
const sampleLog = `***************** properties *****************
"recordcount"="1000"
"workload"="site.ycsb.workloads.CoreWorkload"
**********************************************
READ usertable user6284781860667377211 [ field0 ]
UPDATE usertable user8517097267634966620 [ field0=(9&0+K7!" ]
INSERT usertable user1 [ field1=abc field0=de f ]
SCAN usertable user5 3 [ <all fields>]
DELETE usertable user5
[OVERALL], RunTime(ms), 42
[READ], Operations, 1
`

func TestTraceSource(t *testing.T) {
	src := NewTraceSource(strings.NewReader(sampleLog))
	var ops []Op
	var op Op
	for src.Next(&op) {
		ops = append(ops, op)
	}
	if err := src.Err(); err != nil {
		t.Fatal(err)
	}
	want := []Op{
		{Type: OpRead, KeyNum: -1, Key: 6284781860667377211},
		{Type: OpUpdate, KeyNum: -1, Key: 8517097267634966620, ValueLen: 9},
		{Type: OpInsert, KeyNum: -1, Key: 1, ValueLen: 7},
		{Type: OpScan, KeyNum: -1, Key: 5, ScanLen: 3},
		{Type: OpDelete, KeyNum: -1, Key: 5},
	}
	if len(ops) != len(want) {
		t.Fatalf("got %d ops %+v, want %d", len(ops), ops, len(want))
	}
	for i := range want {
		if ops[i] != want[i] {
			t.Errorf("op %d = %+v, want %+v", i, ops[i], want[i])
		}
	}
	bad := NewTraceReader(strings.NewReader("READ usertable user1 [ field0 ]\nREAD usertable\n"))
	for _, ok := bad.Next(); ok; _, ok = bad.Next() {
	}
	if bad.Err() == nil || !strings.Contains(bad.Err().Error(), "line 2") {
		t.Errorf("malformed line 2: err %v", bad.Err())
	}
}

func FuzzParseTraceLine(f *testing.F) {
	for _, l := range strings.Split(sampleLog, "\n") {
		f.Add([]byte(l))
	}
	f.Add([]byte("UPDATE t k [ field0=a field1=b ]"))
	f.Fuzz(func(t *testing.T, line []byte) {
		var rec TraceRecord
		err := ParseTraceLine(line, &rec)
		if err != nil {
			return
		}
		// Views must lie inside the line, and counts must be consistent.
		for _, v := range [][]byte{rec.Table, rec.Key, rec.Body} {
			if len(v) > 0 && !bytes.Contains(line, v) {
				t.Fatalf("view %q not in line %q", v, line)
			}
		}
		if rec.ValueBytes < 0 || rec.ValueBytes > len(line) || rec.Fields < 0 || rec.Fields > len(line) {
			t.Fatalf("bad counts %+v for %q", rec, line)
		}
		if len(rec.Key) == 0 || len(rec.Table) == 0 {
			t.Fatalf("accepted %q with an empty key or table", line)
		}
	})
}

func BenchmarkParseTraceLine(b *testing.B) {
	line := []byte("UPDATE usertable user8517097267634966620 [ field0=" + strings.Repeat("x", 100) + " ]")
	var rec TraceRecord
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if err := ParseTraceLine(line, &rec); err != nil {
			b.Fatal(err)
		}
	}
}
