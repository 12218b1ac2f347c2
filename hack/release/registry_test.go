package main

import (
	"os"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/tailor-sh/tailor/internal/containerimage"
)

// TestPushLayoutToTheLoopbackRegistry pushes a layout as the dry run does and reads it back by
// tag: the tag must name the digest pushLayout returns, which is the digest that gets signed.
func TestPushLayoutToTheLoopbackRegistry(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeLayout(t, dir, exe)
	reg, err := startRegistry()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	ref, err := pushLayout(containerimage.LayoutDir(dir), reg.Host+"/tailor/x", "v0.0.0-test", true)
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := releaseIndex(containerimage.LayoutDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if ref.DigestStr() != want.String() {
		t.Errorf("pushLayout returned %s, want the layout's index %s", ref, want)
	}
	tag, err := name.NewTag(reg.Host+"/tailor/x:v0.0.0-test", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(tag)
	if err != nil {
		t.Fatalf("the registry has nothing at %s: %v", tag, err)
	}
	if desc.Digest != want {
		t.Errorf("%s is %s in the registry, want %s", tag, desc.Digest, want)
	}
	if _, err := saveBundles(ref, dir+"/x"); err == nil {
		t.Error("saveBundles found a signature on an image nothing signed")
	}
}
