package main

import (
	"errors"

	"github.com/graphmill/graphmill/dataset"
)

func readNPZ(*importFlags) (*dataset.Raw, error) {
	return nil, errors.New("npz import: not available yet")
}
func readOGB(*importFlags) (*dataset.Raw, error) {
	return nil, errors.New("ogb import: not available yet")
}
