package dist

// SetTestHostKey makes each rank's host identity f(rank) (nil: the real
// one), for tests of ranks spread over hosts.
func SetTestHostKey(f func(rank int) string) { testHostKey = f }
