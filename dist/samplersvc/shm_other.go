//go:build !linux

package samplersvc

import "errors"

func openSegment(path string, size uint64, token []byte) (*segment, error) {
	return nil, errors.New("shared-memory frames need Linux")
}

type fileID struct{}

func fileIdentity(path string) (fileID, error) {
	return fileID{}, errors.New("shared-memory frames need Linux")
}

func (s *segment) reserve(off, n int) error { return errors.New("shared-memory frames need Linux") }

func (s *segment) close() {}
