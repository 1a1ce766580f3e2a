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
	fs.Var(&count{p: p}, name, usage)
}

// PositiveVar is CountVar for a count that must be 1 or more when given
// (a batch size, a number of heads): 0 is refused too, instead of
// silently meaning the default. value, the default, may be 0 where the
// command chooses one when the flag is not given.
func PositiveVar(fs *pflag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fs.Var(&count{p: p, min: 1}, name, usage)
}

// count is CountVar's and PositiveVar's flag value.
type count struct {
	p   *int
	min int
}

func (c *count) String() string { return strconv.Itoa(*c.p) }

func (c *count) Type() string { return "int" }

func (c *count) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	if v < c.min {
		if c.min == 0 {
			return fmt.Errorf("%d is negative: want a count of 0 or more", v)
		}
		return fmt.Errorf("want a count of %d or more", c.min)
	}
	*c.p = v
	return nil
}
