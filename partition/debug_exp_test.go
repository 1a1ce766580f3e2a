//go:build exp

package partition

import (
	"fmt"
	"time"
)

var t0 time.Time

func init() {
	debugf = func(f string, a ...any) {
		if f == "start" {
			t0 = time.Now()
		}
		fmt.Printf("%8.3fs "+f+"\n", append([]any{time.Since(t0).Seconds()}, a...)...)
	}
}

func SetExp(div float64, tries int, rating bool) { expCoarsenDiv, expTries, expRating = div, tries, rating }
