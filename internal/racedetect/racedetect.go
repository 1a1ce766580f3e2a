// Package racedetect reports whether the binary was built with the race
// detector (go test -race), so that tests can leave out, under it, the
// long cases that exercise no concurrent code of their own.
package racedetect
