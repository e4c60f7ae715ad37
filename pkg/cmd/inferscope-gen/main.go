// Command inferscope-gen writes the files generated from the engine's query-type registry (see
// pkg/engine/specgen): run through `go generate ./pkg/engine/specgen`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/inferscope/inferscope/pkg/engine/specgen"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	files, err := specgen.Files(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "inferscope-gen:", err)
		os.Exit(1)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(*root, n)
		if old, err := os.ReadFile(path); err == nil && string(old) == string(files[n]) {
			continue
		}
		if err := os.WriteFile(path, files[n], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "inferscope-gen:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "wrote", n)
	}
}
