// Command crpeer is the other side of bench/fast_path.ts. It has two modes:
//
//	crpeer webhook -cert-dir DIR -port PORT
//	crpeer load -url URL -ca FILE -body FILE [-connections N] [-duration D | -requests N]
//
// "webhook" serves a controller-runtime validating webhook that allows every
// review, the way a controller-runtime operator serves one. "load" is the
// load generator that measures it and the webhook under test alike.
package main

import (
	"fmt"
	"os"
)

const usage = `usage:
  crpeer webhook -cert-dir DIR -port PORT [-host HOST]
  crpeer load -url URL -ca FILE -body FILE [-connections N] [-warmup D] [-duration D | -requests N] [-server-pid PID]`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "webhook":
		err = runWebhook(os.Args[2:])
	case "load":
		err = runLoad(os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "crpeer: unknown mode %q\n%s\n", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "crpeer %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
