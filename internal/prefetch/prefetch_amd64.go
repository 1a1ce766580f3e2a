//go:build !noasm

package prefetch

//go:noescape
func spans32(base *int32, offs *int64, n int)

//go:noescape
func rows64(base *int64, ids *int32, n int)

//go:noescape
func rows32(base *uint32, ids *int32, n int)

//go:noescape
func rowsBytes(base *byte, rowBytes int, ids *int32, n int)

//go:noescape
func at32(base *int32, pos *int64, n int)

//go:noescape
func masks32(base *int32, offs *int64, masks *uint64, n int)
