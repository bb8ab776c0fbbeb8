// Command etcd is a thin wrapper: go.etcd.io/etcd/server/v3 has replace
// directives, so it cannot be built with `go install pkg@version`; a module of
// our own that requires it at a pinned version can.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
