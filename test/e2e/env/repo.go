package env

import (
	"os"
	"path/filepath"
	"sync"
)

var repoRoot = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
})

// RepoPath is a path under the repository's root: the nearest directory above the working
// directory that holds go.mod. `go test` runs a suite in its package's directory, so every suite
// reaches examples/ and charts/ the same way whatever its depth. It panics outside the module,
// where no e2e test can run.
func RepoPath(elem ...string) string {
	root, err := repoRoot()
	if err != nil {
		panic("test/e2e: no go.mod above the working directory: " + err.Error())
	}
	return filepath.Join(append([]string{root}, elem...)...)
}
