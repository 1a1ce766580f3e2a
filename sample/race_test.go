//go:build race

package sample

func init() { raceEnabled = true }
