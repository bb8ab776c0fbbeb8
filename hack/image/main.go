// Command image writes a container image as a docker-archive tarball (which
// `ctr images import`, `buildah pull docker-archive:` and `docker load` all read)
// from directories on disk, one layer each, with no daemon and no registry.
// It is test and build infrastructure only: the operator itself is TypeScript.
//
//	image -out FILE -ref NAME:TAG [-layer DIR]... [-user U] [-env K=V]... \
//	      [-workdir DIR] [-entrypoint JSON] [-cmd JSON]
//
// Files in the layers are owned by root (0:0) and stamped with one fixed time,
// so the same inputs give the same image digest.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

// epoch: every file's mtime and the image's creation time (reproducible builds).
var epoch = time.Unix(0, 0).UTC()

func main() {
	var layers, envs list
	out := flag.String("out", "", "tarball to write")
	ref := flag.String("ref", "", "image reference recorded in the tarball (NAME:TAG)")
	user := flag.String("user", "", "the config's User")
	workdir := flag.String("workdir", "", "the config's WorkingDir")
	entrypoint := flag.String("entrypoint", "", "the config's Entrypoint, as a JSON array")
	cmd := flag.String("cmd", "", "the config's Cmd, as a JSON array")
	flag.Var(&layers, "layer", "a directory whose contents become one layer (repeatable, lowest first)")
	flag.Var(&envs, "env", "KEY=VALUE for the config's Env (repeatable)")
	flag.Parse()
	if *out == "" || *ref == "" {
		fail("-out and -ref are required")
	}
	tag, err := name.NewTag(*ref)
	if err != nil {
		fail("-ref %q: %v", *ref, err)
	}

	img := empty.Image
	for _, dir := range layers {
		data, err := tarDir(dir)
		if err != nil {
			fail("-layer %s: %v", dir, err)
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		})
		if err != nil {
			fail("-layer %s: %v", dir, err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			fail("-layer %s: %v", dir, err)
		}
	}

	cf, err := img.ConfigFile()
	if err != nil {
		fail("config: %v", err)
	}
	cfg := cf.Config
	cfg.User = *user
	cfg.WorkingDir = *workdir
	cfg.Env = envs
	if cfg.Entrypoint, err = jsonList("-entrypoint", *entrypoint); err != nil {
		fail("%v", err)
	}
	if cfg.Cmd, err = jsonList("-cmd", *cmd); err != nil {
		fail("%v", err)
	}
	if img, err = mutate.Config(img, cfg); err != nil {
		fail("config: %v", err)
	}
	cf, _ = img.ConfigFile()
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = "amd64", "linux", v1.Time{Time: epoch}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		fail("config: %v", err)
	}

	tmp := *out + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		fail("write %s: %v", *out, err)
	}
	if err := os.Rename(tmp, *out); err != nil {
		fail("%v", err)
	}
	digest, _ := img.Digest()
	fmt.Println(digest)
}

func jsonList(flagName, s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("%s must be a JSON array of strings: %v", flagName, err)
	}
	return v, nil
}

// tarDir writes dir's tree as a layer tarball: sorted paths, root-owned, fixed
// times; symlinks kept as links; only regular files, directories and links.
func tarDir(dir string) ([]byte, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dir, p)
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return nil, err
			}
		} else if !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil, fmt.Errorf("%s: only files, directories and symlinks go into a layer", p)
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return nil, err
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = epoch, time.Time{}, time.Time{}
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "image: "+format+"\n", a...)
	os.Exit(1)
}
