package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// RefuseUnknown makes every command group below c (graphmill data, bench, serve)
// fail on an unknown subcommand, as the root does, instead of printing
// its help and succeeding.
func RefuseUnknown(c *cobra.Command) {
	for _, sub := range c.Commands() {
		if sub.HasSubCommands() && sub.Run == nil && sub.RunE == nil {
			sub.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
			sub.SuggestionsMinimumDistance = 2
			sub.Args = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return nil
				}
				hint := ""
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					hint = "; did you mean " + s[0] + "?"
				}
				return fmt.Errorf("unknown command %q for %q%s (see %s --help)", args[0], cmd.CommandPath(), hint, cmd.CommandPath())
			}
		}
		RefuseUnknown(sub)
	}
}

// NoArgs refuses positional arguments, saying what to give instead (a
// dataset given as an argument to a command that takes --dataset).
func NoArgs(hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("%s takes no positional argument (got %q): %s", cmd.CommandPath(), args[0], hint)
		}
		return nil
	}
}

// OneArg wants exactly one positional argument, the thing named what.
func OneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("%s takes one %s, got %d arguments (usage: %s)", cmd.CommandPath(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}
