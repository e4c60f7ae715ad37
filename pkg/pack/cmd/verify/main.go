// Command verify checks a release zip against the packaging rules:
//
//	go run ./pkg/pack/cmd/verify inferscope-monitor-app-<version>.zip
//
// It prints every violation and exits 1 when there is any.
package main

import (
	"fmt"
	"os"

	"github.com/inferscope/inferscope/pkg/pack"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: verify <"+pack.ZipName("<version>")+">")
		os.Exit(2)
	}
	problems := pack.Verify(os.Args[1])
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "%s breaks %d packaging rule(s):\n", os.Args[1], len(problems))
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "  - "+p)
		}
		os.Exit(1)
	}
	fmt.Printf("%s: ok\n", os.Args[1])
}
