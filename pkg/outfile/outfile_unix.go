//go:build unix

package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// writeFIFO writes to a named pipe only when a reader has it open: opening it for writing
// would otherwise wait for one for ever.
func writeFIFO(path, target string, body []byte) error {
	f, err := os.OpenFile(target, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENXIO) {
		return fmt.Errorf("cannot write %s: it is a FIFO and no process is reading it", path)
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	// Blocking writes from here on: a slow reader is waited for, not dropped.
	if err := syscall.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return finish(path, f, body)
}

// keepOwner gives the new file the replaced file's owner and group, where the process may
// (only root may give a file away; otherwise the file is the writer's, as with any editor).
func keepOwner(f *os.File, old fs.FileInfo) {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid()) {
		return
	}
	_ = f.Chown(int(st.Uid), int(st.Gid))
}
