//go:build !unix

package outfile

import (
	"fmt"
	"io/fs"
	"os"
)

// writeFIFO: named pipes are opened like any other special file where they exist.
func writeFIFO(path, target string, body []byte) error {
	if _, err := os.Stat(target); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	return writeInPlace(path, target, body, os.O_WRONLY)
}

func keepOwner(*os.File, fs.FileInfo) {}
