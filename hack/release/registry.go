package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// keychain is where registry credentials come from: the Docker configuration that a registry
// login writes, which cosign and helm read as well. The loopback registry needs none.
var keychain = authn.DefaultKeychain

// localRegistry is go-containerregistry's in-memory registry on a loopback port. The dry run
// pushes the image there because cosign signs and verifies an image through a registry: the
// signature is an OCI artifact stored beside the image. Nothing leaves the machine, and the
// registry and all it holds are gone when the dry run ends (the signature is also written to
// files, which stay).
type localRegistry struct {
	Host string // 127.0.0.1:PORT
	srv  *http.Server
}

func startRegistry() (*localRegistry, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the local registry: %w", err)
	}
	srv := &http.Server{Handler: registry.New(
		registry.Logger(log.New(io.Discard, "", 0)),
		// OCI 1.1 referrers, as registries serve them today: where cosign v3 stores a signature.
		registry.WithReferrersSupport(true),
	)}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("local registry: %v", err)
		}
	}()
	return &localRegistry{Host: l.Addr().String(), srv: srv}, nil
}

func (r *localRegistry) Close() error { return r.srv.Close() }

// pushLayout pushes the index make image wrote into an OCI layout (the one entry of its
// index.json) as repo:tag, and returns the pushed index's reference by digest: what gets signed.
func pushLayout(dir string, repo, tag string, insecure bool) (name.Digest, error) {
	idx, d, err := releaseIndex(dir)
	if err != nil {
		return name.Digest{}, err
	}
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.NewTag(repo+":"+tag, opts...)
	if err != nil {
		return name.Digest{}, err
	}
	if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(keychain)); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	return ref.Context().Digest(d.String()), nil
}

// releaseIndex is the multi-platform index in an OCI layout that make image wrote: the one
// entry of its index.json.
func releaseIndex(dir string) (v1.ImageIndex, v1.Hash, error) {
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, v1.Hash{}, fmt.Errorf("reading the OCI layout %s (run make image first): %w", dir, err)
	}
	rm, err := root.IndexManifest()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	if len(rm.Manifests) != 1 {
		return nil, v1.Hash{}, fmt.Errorf("%s: index.json lists %d entries, want the one index make image writes", dir, len(rm.Manifests))
	}
	d := rm.Manifests[0].Digest
	idx, err := root.ImageIndex(d)
	return idx, d, err
}

// writeFirstLayer writes an artifact's first layer, uncompressed, to a file.
func writeFirstLayer(img v1.Image, path string) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	if len(layers) == 0 {
		return errors.New("the artifact has no layers")
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
