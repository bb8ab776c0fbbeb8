// A tiny HTTP server for the cluster's own tests: it answers every request
// with the pod's hostname, so a test can tell which pod a Service reached, and
// says where it listens (for `kubectl logs`). `hello -hostname` prints the
// hostname and exits (for `kubectl exec`).
package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	host, _ := os.Hostname()
	addr := ":8080"
	if len(os.Args) > 1 && os.Args[1] == "-hostname" {
		fmt.Println(host)
		return
	}
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	fmt.Printf("listening on %s\n", addr)
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", host)
	})
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
		<-stop
		os.Exit(0)
	}()
	if err := http.ListenAndServe(addr, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
