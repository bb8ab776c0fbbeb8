// Command xds-go is test infrastructure for edge-operator: a second xDS
// consumer beside @grpc/grpc-js-xds (grpc-go's proxyless client) and a checker
// of Envoy resources against the protoc-gen-validate rules in Envoy's protos.
// Both speak JSON lines on stdin and stdout; diagnostics go to stderr.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "validate":
		err = runValidate(os.Stdin, os.Stdout)
	case "client":
		err = runClient(os.Stdin, os.Stdout)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "xds-go %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: xds-go validate|client  (JSON lines on stdin, one JSON line per answer on stdout)")
	os.Exit(2)
}

// lines yields stdin's lines without a length limit: a route configuration at
// thousands of routes is megabytes of base64 on one line.
func lines(r io.Reader, each func([]byte) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if trimmed := trimSpace(line); len(trimmed) > 0 {
				if e := each(trimmed); e != nil {
					return e
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// jsonOut writes one JSON value per line; safe from many goroutines.
type jsonOut struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newJSONOut(w io.Writer) *jsonOut {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonOut{enc: enc}
}

func (o *jsonOut) write(v any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.enc.Encode(v); err != nil {
		// Nobody reads us any more: nothing left worth doing.
		fmt.Fprintf(os.Stderr, "xds-go: stdout: %v\n", err)
		os.Exit(1)
	}
}
