package units

import (
	"testing"
	"time"
)

func TestParseBytes(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		err  bool
	}{
		{"2GiB", 2 << 30, false}, {"0.1G", 107374182, false}, {"512MB", 512e6, false},
		{"64k", 65536, false}, {"100", 100, false}, {" 1 GiB ", 1 << 30, false}, {"1.5KiB", 1536, false},
		{"", 0, true}, {"GiB", 0, true}, {"2XB", 0, true}, {"-1G", 0, true}, {"1e400", 0, true},
	}
	for _, c := range cases {
		got, err := ParseBytes(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, err=%v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestParseCount(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		err  bool
	}{
		{"10M", 10e6, false}, {"200M", 200e6, false}, {"2.5k", 2500, false}, {"7", 7, false}, {"1G", 1e9, false},
		{"1.5", 0, true}, {"x", 0, true}, {"-3", 0, true}, {"", 0, true},
	}
	for _, c := range cases {
		got, err := ParseCount(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d, err=%v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestFormat(t *testing.T) {
	if s := Bytes(3 << 29); s != "1.5 GiB" {
		t.Error(s)
	}
	if s := Bytes(12); s != "12 B" {
		t.Error(s)
	}
	if s := Count(2708); s != "2.71k" {
		t.Error(s)
	}
	if s := Count(int64(200e6)); s != "200M" {
		t.Error(s)
	}
	if s := Duration(1250 * time.Millisecond); s != "1.25s" {
		t.Error(s)
	}
	if s := Duration(125 * time.Second); s != "2m05s" {
		t.Error(s)
	}
	// Three significant digits, never in exponent form.
	for _, c := range []struct{ got, want string }{
		{Bytes(1000 << 10), "1000 KiB"}, {Bytes(1023 << 20), "1023 MiB"}, {Bytes(999<<10 + 900), "1000 KiB"},
		{Bytes(1 << 40), "1 TiB"}, {Count(999_700), "1000k"}, {Count(999.7), "1000"}, {Count(2.5e12), "2500G"},
		{Duration(999_700 * time.Nanosecond), "1000µs"}, {Duration(999_700 * time.Microsecond), "1000ms"},
		{Bytes(-3 << 29), "-1.5 GiB"},
	} {
		if c.got != c.want {
			t.Errorf("formatted %q, want %q", c.got, c.want)
		}
	}
}
