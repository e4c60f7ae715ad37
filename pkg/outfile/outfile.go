// Package outfile writes a command's output to the path a user named, the way careful tools do:
// a regular file is replaced atomically and keeps its mode, a symbolic link is followed and its
// target written, a device or FIFO is written in place (never replaced by a plain file), and a
// socket or directory is refused with a message that says why.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
)

// Stdout is the path that means standard output.
const Stdout = "-"

// newFileMode is the mode of a file the write creates (before the umask).
const newFileMode = 0o644

// Write writes body to path ("-" = stdout). A failed write leaves an existing regular file as
// it was.
func Write(path string, body []byte, stdout io.Writer) error {
	if path == Stdout {
		_, err := stdout.Write(body)
		return err
	}
	target, err := resolve(path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return replace(target, body, 0, nil)
	case err != nil:
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	switch mode := fi.Mode(); {
	case mode.IsRegular():
		return replace(target, body, mode.Perm(), fi)
	case mode.IsDir():
		return fmt.Errorf("cannot write %s: it is a directory; name a file in it", path)
	case mode&fs.ModeSocket != 0:
		return fmt.Errorf("cannot write %s: it is a socket, not a file", path)
	case mode&fs.ModeNamedPipe != 0:
		return writeFIFO(path, target, body)
	default: // character or block device
		return writeInPlace(path, target, body, os.O_WRONLY)
	}
}

// resolve follows symbolic links, including a dangling last one (its target is created).
func resolve(path string) (string, error) {
	for range 40 { // the kernel's own bound on nested links
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", fmt.Errorf("cannot write %s: too many levels of symbolic links", path)
}

// replace writes through a temporary file in the same directory and renames it over target, so
// a reader sees the old content or the new, never half of it. old, when set, is the file being
// replaced: its permissions (perm) and, where the process may set it, its owner are kept; a new
// file gets newFileMode less the umask.
func replace(target string, body []byte, perm fs.FileMode, old fs.FileInfo) error {
	tmp, err := createTemp(target)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", target, unwrapPath(err))
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	fail := func(err error) error {
		tmp.Close()
		return fmt.Errorf("cannot write %s: %w", target, unwrapPath(err))
	}
	if _, err := tmp.Write(body); err != nil {
		return fail(err)
	}
	if old != nil {
		if err := tmp.Chmod(perm); err != nil {
			return fail(err)
		}
		keepOwner(tmp, old)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", target, unwrapPath(err))
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("cannot write %s: %w", target, unwrapPath(err))
	}
	return nil
}

func writeInPlace(path, target string, body []byte, flag int) error {
	f, err := os.OpenFile(target, flag, 0)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	return finish(path, f, body)
}

func finish(path string, f *os.File, body []byte) error {
	if _, err := f.Write(body); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	return nil
}

// unwrapPath drops the *PathError's own copy of the path, which the message already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

var tempSeq atomic.Uint64

// createTemp creates a new file beside target, with newFileMode so the kernel applies the umask
// (os.CreateTemp makes 0600 files, which would need the umask read back to widen).
func createTemp(target string) (*os.File, error) {
	dir, base := filepath.Dir(target), "."+filepath.Base(target)+"."
	seed := uint64(time.Now().UnixNano()) ^ uint64(os.Getpid())<<32
	for {
		name := filepath.Join(dir, base+strconv.FormatUint(seed+tempSeq.Add(1), 36)+".tmp")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, newFileMode)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}
