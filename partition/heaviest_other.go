//go:build !amd64 || noasm

package partition

// heaviestFast is matcher.heaviest: there is no assembly loop here.
func (m *matcher) heaviestFast(v, lo, hi int32) int32 { return m.heaviest(v, lo, hi) }

// hasHeaviestFast tells whether heaviestFast is the assembly loop.
const hasHeaviestFast = false
