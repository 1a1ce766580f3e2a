package sar

import "os"

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "sar-test") }
func osRemoveAll(d string)         { os.RemoveAll(d) }
func osExit(c int)                 { os.Exit(c) }
