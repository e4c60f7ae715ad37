//go:build unix

package outfile

import (
	"bytes"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func noLeftovers(t *testing.T, dir string, want ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("directory holds %v, want %v (a temporary file left behind?)", names, want)
	}
}

func TestNewRegularFileGetsDefaultModeLessUmask(t *testing.T) {
	dir := t.TempDir()
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(dir, "rules.yml")
	if err := Write(path, []byte("new\n"), nil); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "new\n" {
		t.Errorf("content %q", got)
	}
	fi, _ := os.Stat(path)
	if fi.Mode() != 0o644 {
		t.Errorf("mode %v, want -rw-r--r--", fi.Mode())
	}
	noLeftovers(t, dir, "rules.yml")
}

func TestRegularFileReplacedKeepsItsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(path, []byte("old content that is longer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	if err := Write(path, []byte("new\n"), nil); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "new\n" {
		t.Errorf("content %q", got)
	}
	after, _ := os.Stat(path)
	if after.Mode() != 0o640 {
		t.Errorf("mode %v, want the old -rw-r-----", after.Mode())
	}
	if os.SameFile(before, after) {
		t.Error("the file was rewritten in place: a reader could see half of it")
	}
	noLeftovers(t, dir, "rules.yml")
}

func TestSymlinkIsFollowedAndStaysALink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.yml")
	if err := os.WriteFile(real, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yml")
	if err := os.Symlink("real.yml", link); err != nil { // relative, as users write them
		t.Fatal(err)
	}
	if err := Write(link, []byte("new\n"), nil); err != nil {
		t.Fatal(err)
	}
	if got := read(t, real); got != "new\n" {
		t.Errorf("the link's target holds %q, want the new content", got)
	}
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link is no longer a symbolic link (%v, %v)", fi, err)
	}
	noLeftovers(t, dir, "link.yml", "real.yml")
}

func TestDanglingSymlinkCreatesItsTarget(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yml")
	if err := os.Symlink(filepath.Join(sub, "target.yml"), link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("new\n"), nil); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(sub, "target.yml")); got != "new\n" {
		t.Errorf("target holds %q", got)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&fs.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
}

func TestSymlinkLoopIsAnError(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.Symlink(b, a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, b); err != nil {
		t.Fatal(err)
	}
	err := Write(a, []byte("x"), nil)
	if err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
		t.Fatalf("err = %v", err)
	}
}

func TestDeviceIsWrittenInPlace(t *testing.T) {
	if err := Write("/dev/null", []byte("x"), nil); err != nil {
		t.Fatalf("/dev/null: %v", err)
	}
	fi, err := os.Stat("/dev/null")
	if err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a character device: %v %v", fi, err)
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	err = Write("/dev/full", []byte("x"), nil)
	if err == nil || !strings.Contains(err.Error(), "cannot write /dev/full") || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("/dev/full: err = %v, want the device's own error", err)
	}
	if fi, _ := os.Stat("/dev/full"); fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatal("/dev/full was replaced by a plain file")
	}
}

func TestFIFOWithReaderReceivesTheBody(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opening for reading without O_NONBLOCK would wait for a writer: open non-blocking, then
	// read in the background.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.SetNonblock(int(r.Fd()), false); err != nil {
		t.Fatal(err)
	}
	// A FIFO without writers reads as at its end: hold one open so the reader waits for Write.
	hold, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	body := bytes.Repeat([]byte("rule\n"), 40000) // larger than a pipe's buffer
	got := make(chan string, 1)
	go func() {
		b := make([]byte, len(body))
		n, _ := io.ReadFull(r, b)
		r.Close()
		got <- string(b[:n])
	}()
	if err := Write(fifo, body, nil); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != string(body) {
		t.Errorf("reader got %d bytes, want %d", len(s), len(body))
	}
	if fi, _ := os.Lstat(fifo); fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
}

func TestFIFOWithoutReaderIsRefusedNotAwaited(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	err := Write(fifo, []byte("x"), nil)
	if err == nil || !strings.Contains(err.Error(), "no process is reading it") {
		t.Fatalf("err = %v", err)
	}
	if fi, _ := os.Lstat(fifo); fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
	noLeftovers(t, dir, "pipe")
}

func TestSocketAndDirectoryAreRefused(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := Write(sock, []byte("x"), nil); err == nil || !strings.Contains(err.Error(), "is a socket") {
		t.Errorf("socket: err = %v", err)
	}
	if fi, _ := os.Lstat(sock); fi.Mode()&fs.ModeSocket == 0 {
		t.Error("the socket was replaced")
	}
	if err := Write(dir, []byte("x"), nil); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: err = %v", err)
	}
}

func TestDashIsStandardOutput(t *testing.T) {
	var out bytes.Buffer
	if err := Write("-", []byte("body"), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "body" {
		t.Errorf("stdout got %q", out.String())
	}
}

func TestMissingDirectoryIsAClearError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "rules.yml")
	err := Write(path, []byte("x"), nil)
	if err == nil || !strings.Contains(err.Error(), "cannot write "+path) || !strings.Contains(err.Error(), "no such file or directory") {
		t.Fatalf("err = %v", err)
	}
}

func TestFailedReplaceKeepsTheOldFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write into a read-only directory")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if err := Write(path, []byte("new\n"), nil); err == nil {
		t.Fatal("wrote into a read-only directory")
	}
	if got := read(t, path); got != "old\n" {
		t.Errorf("old file now holds %q", got)
	}
}
