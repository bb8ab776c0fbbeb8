// Writes a single-layer image as a tarball that `ctr images import` loads, so
// the cluster needs no registry and no base image: each -file SRC=DEST puts a
// host file at DEST in the layer (mode kept, owner root unless -uid is given).
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type files map[string]string

func (f files) String() string { return fmt.Sprint(map[string]string(f)) }
func (f files) Set(s string) error {
	src, dest, ok := strings.Cut(s, "=")
	if !ok || src == "" || !strings.HasPrefix(dest, "/") {
		return fmt.Errorf("-file wants SRC=/DEST, got %q", s)
	}
	f[dest] = src
	return nil
}

func main() {
	ref := flag.String("ref", "", "image reference, e.g. localhost/pause:1")
	out := flag.String("out", "", "tarball to write")
	entrypoint := flag.String("entrypoint", "", "entrypoint, words separated by spaces")
	user := flag.String("user", "", "user the image runs as, e.g. 65532")
	uid := flag.Int("uid", 0, "owner of the files in the layer")
	fs := files{}
	flag.Var(fs, "file", "SRC=/DEST, repeatable")
	flag.Parse()
	if *ref == "" || *out == "" || len(fs) == 0 {
		fmt.Fprintln(os.Stderr, "image-tar: -ref, -out and at least one -file are required")
		os.Exit(2)
	}
	if err := write(*ref, *out, *entrypoint, *user, *uid, fs); err != nil {
		fmt.Fprintln(os.Stderr, "image-tar:", err)
		os.Exit(1)
	}
}

func write(ref, out, entrypoint, user string, uid int, fs files) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	layerTar, err := layer(fs, uid)
	if err != nil {
		return err
	}
	l, err := tarball.LayerFromReader(bytes.NewReader(layerTar))
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config = v1.Config{User: user}
	if entrypoint != "" {
		cfg.Config.Entrypoint = strings.Fields(entrypoint)
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, tag, img)
}

// layer builds the tar of one layer, with the parent directories each file needs.
func layer(fs files, uid int) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dests := make([]string, 0, len(fs))
	for d := range fs {
		dests = append(dests, d)
	}
	sort.Strings(dests)
	dirs := map[string]bool{}
	for _, dest := range dests {
		var parents []string
		for d := path.Dir(dest); d != "/" && !dirs[d]; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
			dirs[d] = true
		}
		for _, d := range parents {
			h := &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: epoch}
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
		}
		src := fs[dest]
		st, err := os.Stat(src)
		if err != nil {
			return nil, err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(dest, "/"), Mode: int64(st.Mode().Perm()), Size: st.Size(), ModTime: epoch, Uid: uid, Gid: uid}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		f, err := os.Open(src)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(tw, f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
