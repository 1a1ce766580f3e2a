//go:build !amd64 || noasm

package nn

func adamUpdate(w, g, m, v []float32, k *adamCoef, l2 bool) { adamGeneric(w, g, m, v, k, l2) }
