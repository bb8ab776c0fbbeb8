// A tiny HTTP server for the cluster's own tests: it answers every request
// with the pod's hostname, so a test can tell which pod a Service reached, and
// says where it listens (for `kubectl logs`). `hello -hostname` prints the
// hostname and exits (for `kubectl exec`); `hello -get URL` makes one GET with
// a 3 s timeout and prints the answer (exit 0) or the error (exit 1), so a test
// can try a connection from inside a pod.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	host, _ := os.Hostname()
	addr := ":8080"
	if len(os.Args) > 1 && os.Args[1] == "-hostname" {
		fmt.Println(host)
		return
	}
	if len(os.Args) > 2 && os.Args[1] == "-get" {
		os.Exit(get(os.Args[2]))
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

func get(url string) int {
	client := http.Client{Timeout: 3 * time.Second}
	res, err := client.Get(url)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Print(string(body))
	return 0
}
