// Command hello stands in for tailor-scheduler in the image tests: it links
// k8s.io/component-base/version as the scheduler does, so the tests can run it and read back what
// KubeVersionLDFlags stamped, and it cross-compiles in seconds.
package main

import (
	"fmt"

	"k8s.io/component-base/version"
)

func main() {
	v := version.Get()
	fmt.Println(v.GitVersion, v.GitCommit, v.BuildDate, v.Major, v.Minor)
}
