package sample

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseFanouts parses a comma-separated fanout list such as "25,10" or
// "15, 10, 5" ("-1" or "all" takes every neighbour), and checks it with
// CheckFanouts.
func ParseFanouts(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("fanouts %q: empty (give one per layer, e.g. 25,10)", s)
	}
	parts := strings.Split(s, ",")
	f := make([]int, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if strings.EqualFold(p, "all") {
			f = append(f, -1)
			continue
		}
		k, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("fanouts %q: %q is not an integer", s, p)
		}
		f = append(f, k)
	}
	if err := CheckFanouts(f); err != nil {
		return nil, fmt.Errorf("fanouts %q: %w", s, err)
	}
	return f, nil
}

// FormatFanouts is the inverse of ParseFanouts: "25,10".
func FormatFanouts(f []int) string {
	s := make([]string, len(f))
	for i, k := range f {
		s[i] = strconv.Itoa(k)
	}
	return strings.Join(s, ",")
}

// Fanouts is a fanout list as a command-line flag's value (it satisfies
// pflag.Value and flag.Value): Set parses it with ParseFanouts.
type Fanouts []int

// String formats the list as FormatFanouts does.
func (f *Fanouts) String() string { return FormatFanouts(*f) }

// Set parses s with ParseFanouts.
func (f *Fanouts) Set(s string) error {
	v, err := ParseFanouts(s)
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// Type names the value in help texts.
func (f *Fanouts) Type() string { return "fanouts" }
