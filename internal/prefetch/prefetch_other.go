//go:build !amd64 || noasm

package prefetch

func spans32(base *int32, offs *int64, n int) {}

func rows64(base *int64, ids *int32, n int) {}

func rows32(base *uint32, ids *int32, n int) {}

func rowsBytes(base *byte, rowBytes int, ids *int32, n int) {}

func at32(base *int32, pos *int64, n int) {}

func masks32(base *int32, offs *int64, masks *uint64, n int) {}
