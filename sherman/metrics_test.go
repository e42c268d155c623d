package sherman

import (
	"reflect"
	"testing"
)

// Every counter of Metrics is added and subtracted: a field left out of
// combine keeps its zero here.
func TestMetricsAddSub(t *testing.T) {
	var o Metrics
	v := reflect.ValueOf(&o).Elem()
	for i := 0; i < v.NumField(); i++ {
		v.Field(i).SetUint(uint64(i + 1))
	}
	var m Metrics
	m.Add(o)
	m.Add(o)
	mv := reflect.ValueOf(m)
	for i := 0; i < mv.NumField(); i++ {
		if got, want := mv.Field(i).Uint(), 2*uint64(i+1); got != want {
			t.Errorf("Add: %s = %d, want %d", mv.Type().Field(i).Name, got, want)
		}
	}
	m.Sub(o)
	if m != o {
		t.Errorf("Add twice then Sub: %+v, want %+v", m, o)
	}
}
