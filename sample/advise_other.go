//go:build !linux

package sample

func adviseHuge([]uint64) {}
