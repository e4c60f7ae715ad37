package specgen

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

const root = "../../.."

// TestGeneratedFilesAreFresh regenerates every file into memory and compares it with the one
// in the tree: the frontend's list and the docs' tables must be what the registry says.
func TestGeneratedFilesAreFresh(t *testing.T) {
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `%s` and commit the result", name, Command)
		}
	}
}

func TestEveryTypeDocumented(t *testing.T) {
	var docs [][]byte
	for _, name := range []string{DocsFile, GPUDocsFile} {
		d, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	if err := Documented(docs...); err != nil {
		t.Error(err)
	}
}

func TestDocsMarkers(t *testing.T) {
	out, err := Docs([]byte("intro\n<!-- fields:jitter -->\nold table\n<!-- /fields -->\noutro\n"))
	if err != nil {
		t.Fatal(err)
	}
	table, _ := Table("jitter")
	if want := "intro\n<!-- fields:jitter -->\n" + table + "<!-- /fields -->\noutro\n"; string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	for _, bad := range []string{
		"<!-- fields:no_such_type -->\n<!-- /fields -->\n",
		"<!-- fields:jitter -->\nno end marker\n",
	} {
		if _, err := Docs([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The per-server tables list every profile, every role, and what SGLang and TorchServe need.
func TestProfileTables(t *testing.T) {
	out, err := profileDocs([]byte("a\n<!-- profiles -->\nSTALE-TABLE\n<!-- /profiles -->\nb\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#### SGLang (`sglang`)", "**Needs** --enable-metrics", "**Needs** metrics_mode=prometheus",
		"| errors | not measured | SGLang has no failure counter", "\nb\n"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("tables lack %q", want)
		}
	}
	if bytes.Contains(out, []byte("STALE-TABLE")) {
		t.Error("the old table was kept")
	}
	if _, err := profileDocs([]byte("<!-- profiles -->\nno end\n")); err == nil {
		t.Error("a marker without its end accepted")
	}
}
