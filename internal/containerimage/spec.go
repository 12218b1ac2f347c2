// Package containerimage builds a multi-platform OCI image of one static Go binary on a machine
// with no container daemon and no registry, writes it as an OCI layout and as docker-save
// tarballs, and verifies what it wrote. It lives under internal/ because it is build tooling
// (hack/image), not part of Tailor's API.
//
// The image is built from nothing (no base image: there is none to pull offline), so it holds
// only the binary and a passwd/group pair naming the non-root user it runs as: no shell, no
// package manager, no CA bundle (the binary carries its own roots, see cmd/scheduler/roots.go).
package containerimage

import (
	"fmt"
	"path"
	"regexp"
	"time"
)

// OCI annotation keys (image-spec annotations.md), used as image labels.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelTitle    = "org.opencontainers.image.title"
	LabelLicenses = "org.opencontainers.image.licenses"
	LabelCreated  = "org.opencontainers.image.created"
	// RefName names the index in the OCI layout's index.json, as a tag does in a registry.
	RefName = "org.opencontainers.image.ref.name"
)

// User is the uid:gid the image runs as: the "nonroot" user of distroless images, so
// runAsNonRoot admits it and file ownership matches what operators expect.
const User = "65532:65532"

// Spec is what goes into the image. Verify checks an output against the same Spec, so the
// build and its check cannot drift apart.
type Spec struct {
	// Name is the binary's file name at the image's root (the entrypoint), the title label and
	// the tarballs' file name prefix.
	Name string
	// Repository is the image name, without tag, that the docker tarballs carry (their
	// RepoTags), so `docker load` and `kind load image-archive` name the image.
	Repository string
	// Version is the image tag, the version label and the OCI layout's ref name.
	Version string
	// Revision is the source commit; empty leaves the label out.
	Revision string
	// Source is the source repository's URL.
	Source string
	// Licenses is an SPDX expression; empty leaves the label out.
	Licenses string
	// Created is the image's creation time and every file's mtime. Callers pass the commit time
	// (SOURCE_DATE_EPOCH), not the wall clock, so the same commit gives the same digests.
	Created time.Time
	// Binaries holds one binary per platform, in the order the index lists them.
	Binaries []Binary
}

// Binary is one platform's build of the binary.
type Binary struct {
	OS, Arch string
	// Path is the binary on the local disk.
	Path string
}

// Platform is the binary's platform in the "os/arch" form of --platform flags.
func (b Binary) Platform() string { return b.OS + "/" + b.Arch }

// tagRE is the grammar of a tag in the distribution spec.
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// Validate reports what in s cannot make an image, naming the field.
func (s Spec) Validate() error {
	switch {
	case s.Name == "" || path.Base(s.Name) != s.Name:
		return fmt.Errorf("image name %q: want a plain file name, e.g. tailor-scheduler", s.Name)
	case s.Repository == "":
		return fmt.Errorf("image repository is empty: set it to the image name without a tag, e.g. %s", s.Name)
	case !tagRE.MatchString(s.Version):
		return fmt.Errorf("image version %q is not a valid tag: use letters, digits, '_', '.' and '-', at most 128", s.Version)
	case s.Source == "":
		return fmt.Errorf("image source is empty: set it to the source repository's URL")
	case s.Created.IsZero():
		return fmt.Errorf("image creation time is unset: pass SOURCE_DATE_EPOCH (the commit time)")
	case len(s.Binaries) == 0:
		return fmt.Errorf("image %s has no binaries: pass at least one platform", s.Name)
	}
	seen := map[string]bool{}
	for _, b := range s.Binaries {
		if b.OS == "" || b.Arch == "" || b.Path == "" {
			return fmt.Errorf("image %s: binary %+v needs an OS, an architecture and a path", s.Name, b)
		}
		if seen[b.Platform()] {
			return fmt.Errorf("image %s: platform %s is listed twice", s.Name, b.Platform())
		}
		seen[b.Platform()] = true
	}
	return nil
}

// Labels are the image config's labels, the OCI annotation keys.
func (s Spec) Labels() map[string]string {
	l := map[string]string{
		LabelTitle:   s.Name,
		LabelSource:  s.Source,
		LabelVersion: s.Version,
		LabelCreated: s.Created.UTC().Format(time.RFC3339),
	}
	if s.Revision != "" {
		l[LabelRevision] = s.Revision
	}
	if s.Licenses != "" {
		l[LabelLicenses] = s.Licenses
	}
	return l
}

// Entrypoint is where the binary sits in the image.
func (s Spec) Entrypoint() string { return "/" + s.Name }

// passwd and group name the image's users, so tools that map ids to names (ps, id, log
// shippers) see "nonroot" rather than a bare number. Nothing in the image logs in.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)
