// Package units parses and formats the human-readable sizes, counts and
// durations graphmill's CLI accepts and prints.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseBytes parses a size such as "2GiB", "512MB", "0.1G" (torch-quiver's
// style), "64k" or "1048576". Single-letter and "iB" suffixes are powers of
// 1024; "KB", "MB", "GB", "TB" are powers of 1000.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return r < '0' || r > '9' && r != '.' })
	if num == "" {
		return 0, fmt.Errorf("size %q: no number", s)
	}
	unit := strings.ToLower(strings.TrimSpace(t[len(num):]))
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
		"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
		"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB or K, M, G, T)", s, unit)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v*mult, 0) || v*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q: bad number", s)
	}
	return int64(math.Round(v * mult)), nil
}

// ParseCount parses a count such as "10M", "200M", "1.5k", "2G" or "12345"
// (powers of 1000).
func ParseCount(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	if t != "" {
		switch strings.ToUpper(t[len(t)-1:]) {
		case "K":
			mult = 1e3
		case "M":
			mult = 1e6
		case "G", "B":
			mult = 1e9
		}
		if mult != 1 {
			t = t[:len(t)-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*mult > math.MaxInt64/2 || v*mult != math.Trunc(v*mult) {
		return 0, fmt.Errorf("count %q: want a non-negative whole number such as 12345, 10k, 2.5M or 1G", s)
	}
	return int64(v * mult), nil
}

// Bytes formats a byte count with binary units: "1.5 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		f /= unit
		if math.Abs(f) < unit {
			return sig3(f) + " " + u
		}
	}
	return sig3(f/unit) + " EiB"
}

// sig3 formats f to three significant digits as %.3g does, but never in
// exponent form: 999.7 and 1000 are "1000", not "1e+03".
func sig3(f float64) string {
	s := strconv.FormatFloat(f, 'g', 3, 64)
	if strings.ContainsRune(s, 'e') {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return s
}

// Count formats a count with metric suffixes: "2.71k", "10.6M".
func Count[T int | int32 | int64 | float64](n T) string {
	f := float64(n)
	switch a := math.Abs(f); {
	case a < 1e3:
		if f == math.Trunc(f) {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		return sig3(f)
	case a < 1e6:
		return sig3(f/1e3) + "k"
	case a < 1e9:
		return sig3(f/1e6) + "M"
	default:
		return sig3(f/1e9) + "G"
	}
}

// Duration formats a duration to three significant digits: "1.25s",
// "340ms", "2m05s".
func Duration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return sig3(float64(d)/1e3) + "µs"
	case d < time.Second:
		return sig3(float64(d)/1e6) + "ms"
	case d < time.Minute:
		return sig3(d.Seconds()) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
