// Package doctor checks a cluster and its AWS account for what a Tailor install needs, and says,
// one line per check, what is wrong and what to do: `tailor doctor`. Every check reads; none
// writes to the cluster or the account. Each area has its file; each check is a small function of
// an Env that returns its results.
package doctor

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"

	"github.com/tailor-sh/tailor/pkg/generated/clientset/versioned"
)

// Status is a check's verdict. Any Fail makes `tailor doctor` exit non-zero.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result is one line of the report.
type Result struct {
	// Check names the area, e.g. "subnets" or "interruption-rules".
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Object is what was checked, e.g. "EC2NodeClass default"; empty for account-wide checks.
	Object string `json:"object,omitempty"`
	// Message says what was found; Fix, for warn and fail, what to do about it.
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

func ok(check, object, format string, args ...any) Result {
	return Result{Check: check, Status: OK, Object: object, Message: fmt.Sprintf(format, args...)}
}

func warn(check, object, fix, format string, args ...any) Result {
	return Result{Check: check, Status: Warn, Object: object, Message: fmt.Sprintf(format, args...), Fix: fix}
}

func fail(check, object, fix, format string, args ...any) Result {
	return Result{Check: check, Status: Fail, Object: object, Message: fmt.Sprintf(format, args...), Fix: fix}
}

// Env is what the checks read: the cluster, the account and Tailor's settings.
type Env struct {
	Kube       kubernetes.Interface
	Tailor     versioned.Interface
	Extensions apiextensionsclient.Interface
	// AWS is the account's SDK configuration; nil skips the account's checks with a warning
	// that gives AWSError, why there is none.
	AWS      *aws.Config
	AWSError error
	// Settings are Tailor's, as found in its Deployment or given as flags; Install is what
	// Discover said of the Deployment, the report's first line.
	Settings Settings
	Install  Result
	// Now is the time certificates and the Lease are judged at; time.Now when nil.
	Now func() time.Time
}

func (e *Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// Check is one area's checks.
type Check struct {
	Name string
	Run  func(ctx context.Context, env *Env) []Result
}

// Checks are every check, in the order the report lists them.
var Checks = []Check{
	{"install", checkInstall},
	{"node-role", checkNodeRoles},
	{"subnets", checkSubnets},
	{"security-groups", checkSecurityGroups},
	{"amis", checkAMIs},
	{"interruption-queue", checkInterruptionQueue},
	{"iam-policy", checkIAMPolicy},
	{"crds", checkCRDs},
	{"karpenter", checkKarpenter},
	{"webhook", checkWebhook},
	{"lease", checkLease},
	{"opted-in-pods", checkOptedInPods},
}

// Run runs every check. A check that could not ask (an API error) reports that as a failure of
// its own rather than stopping the others.
func Run(ctx context.Context, env *Env) []Result {
	var out []Result
	for _, c := range Checks {
		out = append(out, c.Run(ctx, env)...)
	}
	return out
}

// Failed counts the failures.
func Failed(results []Result) int {
	n := 0
	for _, r := range results {
		if r.Status == Fail {
			n++
		}
	}
	return n
}

// Write prints one line per result: status, check, object and message, then what to do.
func Write(w io.Writer, results []Result) error {
	var b strings.Builder
	for _, r := range results {
		line := fmt.Sprintf("%-4s  %-19s  ", strings.ToUpper(string(r.Status)), r.Check)
		if r.Object != "" {
			line += r.Object + ": "
		}
		line += r.Message
		if r.Fix != "" {
			line += " -> " + r.Fix
		}
		b.WriteString(line + "\n")
	}
	counts := map[Status]int{}
	for _, r := range results {
		counts[r.Status]++
	}
	fmt.Fprintf(&b, "%d ok, %d warnings, %d failures\n", counts[OK], counts[Warn], counts[Fail])
	_, err := io.WriteString(w, b.String())
	return err
}
