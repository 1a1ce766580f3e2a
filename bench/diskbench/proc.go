package diskbench

import (
	"path/filepath"

	"github.com/graphmill/graphmill/internal/diskio"
)

// dropCache drops the dataset's files from the page cache.
func dropCache(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.npy"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := diskio.DropCache(f); err != nil {
			return err
		}
	}
	return nil
}
