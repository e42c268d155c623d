package sherman

import "testing"

// Reference values of CityHash64 (v1.1) published with the NCBI C++
// toolkit's checksum self-test; together they take every length branch
// (0, 1-3, 8-16, 17-32, 33-64, over 64).
func TestCityHash64Reference(t *testing.T) {
	bin := "\x01\xc0\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\xfe\x60\xac\x00\x00\x00" +
		"\x08\x00\x00\x00\x04\x00\x00\x00\x09\x25\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"", 0x9ae16a3b2f90404f},
		{"a", 0xb3454265b6df75e3},
		{"abc", 0x24a5b3a074e7f369},
		{"message digest", 0x8db193972bf98c6a},
		{"abcdefghijklmnopqrstuvwxyz", 0x5ead741ce7ac31bd},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 0x4566c1e718836cd6},
		{"12345678901234567890123456789012345678901234567890123456789012345678901234567890", 0x791a4c16629ee4cd},
		{bin[:48], 0xca8a7f96d3b805dd},
	} {
		if got := CityHash64([]byte(c.in)); got != c.want {
			t.Errorf("CityHash64(%q) (len %d) = %#x, want %#x", c.in, len(c.in), got, c.want)
		}
	}
}
