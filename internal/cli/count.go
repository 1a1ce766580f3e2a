package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
)

// CountVar defines an int flag for a count of goroutines, threads or
// batches (0 meaning the command's default, such as all cores) that
// refuses a negative value when the flags are parsed, instead of letting
// it silently mean the same as 0.
func CountVar(fs *pflag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fs.Var((*count)(p), name, usage)
}

// count is CountVar's flag value.
type count int

func (c *count) String() string { return strconv.Itoa(int(*c)) }

func (c *count) Type() string { return "int" }

func (c *count) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	if v < 0 {
		return fmt.Errorf("%d is negative: want a count of 0 or more", v)
	}
	*c = count(v)
	return nil
}
