package kvmodel

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

type in struct {
	key, value   uint64
	put, unknown bool
}

var model = Register(func(i, o any) Op {
	x := i.(in)
	op := Op{Key: x.key, Put: x.put, Value: x.value}
	if !x.put && o != nil {
		op.Value = o.(uint64)
	}
	return op
})

func TestRegister(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"get of an untouched key reads 0", []porcupine.Operation{
			{Input: in{key: 1}, Output: uint64(0), Call: 0, Return: 1}}, porcupine.Ok},
		{"get after a put reads it", []porcupine.Operation{
			{Input: in{key: 1, put: true, value: 5}, Call: 0, Return: 1},
			{Input: in{key: 1}, Output: uint64(5), Call: 2, Return: 3}}, porcupine.Ok},
		{"stale read after a completed put", []porcupine.Operation{
			{Input: in{key: 1, put: true, value: 5}, Call: 0, Return: 1},
			{Input: in{key: 1}, Output: uint64(0), Call: 2, Return: 3}}, porcupine.Illegal},
		{"keys are independent", []porcupine.Operation{
			{Input: in{key: 1, put: true, value: 5}, Call: 0, Return: 1},
			{Input: in{key: 2}, Output: uint64(0), Call: 2, Return: 3}}, porcupine.Ok},
		{"concurrent put may or may not be seen", []porcupine.Operation{
			{Input: in{key: 1, put: true, value: 5}, Call: 0, Return: 10},
			{Input: in{key: 1}, Output: uint64(0), Call: 1, Return: 2},
			{Input: in{key: 1}, Output: uint64(5), Call: 3, Return: 4}}, porcupine.Ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(model, tc.h); (got && tc.want != porcupine.Ok) || (!got && tc.want == porcupine.Ok) {
				t.Errorf("linearizable %v, want %v", got, tc.want)
			}
		})
	}
}
