package target

import (
	"fmt"
	"github.com/swordbox/swordbox/p4/target/frontend"
	"math/big"
)

// kind classifies a P4 type.
type kind uint8

const (
	kBit kind = iota // bit<W>, 1 <= W <= 64
	kBool
	kInt // arbitrary-precision integer: literals and untyped constants
	kHeader
	kStruct
	kEnum // plain enums (width 0) and serializable enums (width > 0)
	kError
	kMatchKind
	kString
	kVoid
	kWide // bit<W> with W > 64: header and struct fields only, never computed with
)

// ptype is a resolved P4 type. Named types (headers, structs, enums, error)
// are unique pointers; bit<W> types are interned per width.
type ptype struct {
	kind    kind
	width   int
	name    string
	fields  []*pfield
	size    int // slots: header = 1 (validity) + fields; struct = sum of members
	bits    int // header: total width in bits
	members []string
	values  []uint64 // serializable enum member values
	anns    []frontend.Annotation
}

// pfield is a member of a header or struct. off is the slot offset from
// the start of the enclosing value; bitOff the bit offset in a header.
type pfield struct {
	name   string
	t      *ptype
	off    int
	bitOff int
	anns   []frontend.Annotation
	ro     string // why the program may not write it ("" = it may)
}

var (
	boolT   = &ptype{kind: kBool, width: 1, size: 1}
	intT    = &ptype{kind: kInt, size: 1}
	stringT = &ptype{kind: kString}
	voidT   = &ptype{kind: kVoid}
	bitTs   [65]*ptype
)

func init() {
	for w := 1; w <= 64; w++ {
		bitTs[w] = &ptype{kind: kBit, width: w, size: 1}
	}
}

// maxWidth is the widest bit<W> this target computes with.
const maxWidth = 64

func bitT(w int) *ptype { return bitTs[w] }

// maxWideWidth is the widest bit<W> a header field may have.
const maxWideWidth = 2048

var wideTs = map[int]*ptype{}

// wideT is bit<w> for w > 64: ceil(w/64) slots, most significant first
// (the first slot holds the w mod 64 top bits, or 64).
func wideT(w int) *ptype {
	if t := wideTs[w]; t != nil {
		return t
	}
	t := &ptype{kind: kWide, width: w, size: (w + 63) / 64}
	wideTs[w] = t
	return t
}

func (t *ptype) String() string {
	switch t.kind {
	case kBit, kWide:
		return fmt.Sprintf("bit<%d>", t.width)
	case kBool:
		return "bool"
	case kInt:
		return "int"
	case kString:
		return "string"
	case kVoid:
		return "void"
	case kError:
		return "error"
	case kMatchKind:
		return "match_kind"
	}
	return t.name
}

// scalar reports whether values of t live in one slot.
func (t *ptype) scalar() bool {
	switch t.kind {
	case kBit, kBool, kEnum, kError:
		return true
	}
	return false
}

func (t *ptype) field(name string) *pfield {
	for _, f := range t.fields {
		if f.name == name {
			return f
		}
	}
	return nil
}

func mask(w int) uint64 {
	if w >= 64 {
		return ^uint64(0)
	}
	return uint64(1)<<uint(w) - 1
}

func bigOne() *big.Int { return big.NewInt(1) }

// fitsBits reports whether the (possibly negative) constant v can be the
// value of a bit<w>; negative constants are taken modulo 2^w as in P4.
func toBits(v *big.Int, w int) (uint64, bool) {
	m := new(big.Int).Lsh(bigOne(), uint(w))
	if v.Sign() >= 0 {
		if v.Cmp(m) >= 0 {
			return 0, false
		}
		return v.Uint64(), true
	}
	if new(big.Int).Neg(v).Cmp(m) > 0 {
		return 0, false
	}
	r := new(big.Int).Add(v, m)
	return r.Uint64(), true
}

// symbol kinds.
type symKind uint8

const (
	sVar symKind = iota
	sConst
	sType
	sAction
	sTable
	sExtern
	sPacketIn
	sPacketOut
	sParserState
	sSub // an instance of a parser or control
)

type symbol struct {
	kind     symKind
	t        *ptype
	base     int  // sVar: slot of the value
	readonly bool // sVar: an `in` parameter
	cval     *val // sConst
	act      *actionC
	tbl      *tableC
	ext      *externC
	sub      *subInst
}

type scope struct {
	parent *scope
	m      map[string]*symbol
}

func newScope(parent *scope) *scope { return &scope{parent: parent, m: map[string]*symbol{}} }

func (s *scope) lookup(name string) *symbol {
	for ; s != nil; s = s.parent {
		if v, ok := s.m[name]; ok {
			return v
		}
	}
	return nil
}
