// Package cputime reads CPU clocks: the calling thread's (for a goroutine
// locked to its thread) and the whole process's. Benchmarks report rates
// per CPU-second with them, which hold on a machine shared with noisy
// neighbours where wall-clock rates swing.
package cputime
