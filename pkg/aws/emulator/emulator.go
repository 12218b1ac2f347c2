// Package emulator is an in-process, loopback-only stand-in for the AWS APIs Tailor calls: EC2
// and IAM (Query/XML), SSM, Pricing, SQS and EventBridge (JSON). The real aws-sdk-go-v2 clients talk to it
// over HTTP, so their serializers, pagination, error decoding and retryers run exactly as against
// AWS.
//
// It emulates one region (us-west-2 unless Options.Region says otherwise) with SIMULATED zones
// (fake.RegionZones) and accounts, subnets and images. Its instance types and on-demand prices are
// EC2's own, from the dated snapshot in pkg/aws/ec2facts, and its spot prices follow that
// package's documented rule; the fake cloud (pkg/cloud/fake) keeps its own simulated catalog for
// unit tests. Faults (capacity shortage per offering, throttling, latency) are injected through
// methods, never by chance.
package emulator

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-sh/tailor/pkg/cloud/fake"
)

// Region (the default) and account the emulator pretends to be.
const (
	Region    = fake.Region
	AccountID = "000000000000"
)

// DefaultKubernetesVersion is the version the seeded EKS AMI parameters are published for.
const DefaultKubernetesVersion = "1.36"

// Options configure an Emulator. Every field is optional.
type Options struct {
	// Clock drives launch times, visibility timeouts, boot delays and how long terminated
	// instances stay visible; real time when nil.
	Clock clock.Clock
	// ClusterName is put in the karpenter.sh/discovery tag of the seeded subnets and security
	// group, and names the seeded node role (NodeRoleName).
	ClusterName string
	// Region is the one region emulated, which names its zones, DNS names and ARNs; it must be a
	// name fake.RegionZones accepts. Default: Region.
	Region string
	// KubernetesVersion names the SSM parameters of the seeded EKS AMIs.
	KubernetesVersion string
	// MaxPageSize caps the page size of every paginated call, so tests can force pagination.
	// Listings of the catalog (instance types, offerings, spot prices, price list products),
	// which run to thousands of items, are capped at no fewer than minCatalogPage.
	MaxPageSize int
	// OnLaunch plays the booting instance: it is called, on its own goroutine and BootDelay after
	// launch, with what the instance's kubelet would register. Not called for instances that were
	// terminated before then.
	OnLaunch  func(Launch)
	BootDelay time.Duration
}

// Emulator serves the AWS APIs on a loopback address. It is safe for concurrent use.
type Emulator struct {
	opts   Options
	clock  clock.Clock
	region string
	zones  []fake.Zone
	server *httptest.Server

	mu       sync.Mutex
	nextID   int
	calls    map[string]int
	faults   faults
	catalog  []*instanceTypeInfo
	byName   map[string]*instanceTypeInfo
	world    world
	queues   map[string]*queue
	rules    map[string]*Rule
	requests int
	log      []Call
}

// Start serves a new emulator on 127.0.0.1 until Close.
func Start(opts Options) *Emulator {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.KubernetesVersion == "" {
		opts.KubernetesVersion = DefaultKubernetesVersion
	}
	if opts.Region == "" {
		opts.Region = Region
	}
	zones, err := fake.RegionZones(opts.Region)
	if err != nil {
		// A caller's mistake: the sandbox checks a user's region before it starts an emulator.
		panic(fmt.Sprintf("emulator.Start: %v", err))
	}
	e := &Emulator{
		opts:    opts,
		clock:   opts.Clock,
		calls:   map[string]int{},
		faults:  newFaults(),
		region:  opts.Region,
		zones:   zones,
		catalog: buildCatalog(opts.Region, zones),
		queues:  map[string]*queue{},
	}
	e.byName = make(map[string]*instanceTypeInfo, len(e.catalog))
	for _, it := range e.catalog {
		e.byName[it.InstanceType] = it
	}
	e.world = seedWorld(opts.ClusterName, opts.KubernetesVersion, zones, e.clock.Now())
	// httptest binds the loopback interface only, which is all the emulator may listen on.
	e.server = httptest.NewServer(e)
	return e
}

// minCatalogPage is the smallest page MaxPageSize makes of a catalog listing: smaller pages
// would take thousands of round trips to read EC2's catalog, and test nothing more.
const minCatalogPage = 100

// catalogPageCap is MaxPageSize as it applies to catalog listings.
func (e *Emulator) catalogPageCap() int {
	if e.opts.MaxPageSize > 0 && e.opts.MaxPageSize < minCatalogPage {
		return minCatalogPage
	}
	return e.opts.MaxPageSize
}

// Region is the region emulated.
func (e *Emulator) Region() string { return e.region }

// URL is the endpoint to give every SDK client (BaseEndpoint).
func (e *Emulator) URL() string { return e.server.URL }

// Close stops serving; in-flight long polls return.
func (e *Emulator) Close() {
	e.server.CloseClientConnections()
	e.server.Close()
}

// Calls returns how many requests for the action (e.g. "CreateFleet", "ReceiveMessage") arrived,
// throttled ones included.
func (e *Emulator) Calls(action string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[action]
}

// CalledActions lists every action that was requested at least once, sorted; with the service
// of each it tells which IAM permissions a scenario needs.
func (e *Emulator) CalledActions() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return sortedKeys(e.calls)
}

// ServeHTTP routes by protocol: JSON services name the operation in X-Amz-Target, Query services
// in the Action form field, with Version telling EC2 from IAM.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	service, action := "", ""
	var params query
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		service, action, _ = strings.Cut(target, ".")
	} else {
		if params, err = parseQuery(string(body)); err != nil {
			writeEC2Error(w, e.requestID(), &apiError{Code: "MalformedQueryString", Message: err.Error()})
			return
		}
		service, action = "query:"+params.get("Version"), params.get("Action")
	}
	e.mu.Lock()
	e.calls[action]++
	latency, throttled := e.faults.take(action, service == "query:"+ec2Version, e.clock.Now())
	denied := e.faults.denied[action]
	e.log = append(e.log, Call{Time: e.clock.Now(), Action: action, EC2: service == "query:"+ec2Version, Throttled: throttled})
	if len(e.log) > 2*maxCallLog {
		// A long-running sandbox would grow the log for ever; the newest calls are what a test
		// counts.
		e.log = append(e.log[:0], e.log[len(e.log)-maxCallLog:]...)
	}
	e.mu.Unlock()
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		}
	}
	reqID := e.requestID()
	klog.V(5).Info("AWS emulator request", "service", service, "action", action, "throttled", throttled)
	switch service {
	case "AmazonSSM", "AWSPriceListService", "AmazonSQS", "AWSEvents":
		if throttled {
			writeJSONError(w, &apiError{Code: "ThrottlingException", Message: "Rate exceeded", Status: http.StatusBadRequest})
			return
		}
		e.serveJSON(r.Context(), w, service, action, body)
	case "query:" + ec2Version:
		if throttled {
			writeEC2Error(w, reqID, &apiError{Code: "RequestLimitExceeded", Message: "Request limit exceeded.", Status: http.StatusServiceUnavailable})
			return
		}
		if denied {
			// What EC2 answers when the caller's IAM policy does not allow the action.
			writeEC2Error(w, reqID, &apiError{Code: "UnauthorizedOperation", Status: http.StatusForbidden,
				Message: fmt.Sprintf("You are not authorized to perform this operation. User is not authorized to perform: ec2:%s (SIMULATED)", action)})
			return
		}
		e.serveEC2(w, reqID, action, params)
	case "query:" + iamVersion:
		if throttled {
			writeIAMError(w, reqID, &apiError{Code: "Throttling", Message: "Rate exceeded"})
			return
		}
		e.serveIAM(w, reqID, action, params)
	default:
		writeEC2Error(w, reqID, &apiError{Code: "UnknownOperationException",
			Message: fmt.Sprintf("the AWS emulator does not serve %s %s", service, action)})
	}
}

func (e *Emulator) serveJSON(ctx context.Context, w http.ResponseWriter, service, action string, body []byte) {
	var (
		out any
		err error
	)
	switch service {
	case "AmazonSSM":
		out, err = e.ssm(action, body)
	case "AWSPriceListService":
		out, err = e.pricing(action, body)
	case "AmazonSQS":
		out, err = e.sqs(ctx, action, body)
	case "AWSEvents":
		out, err = e.events(action, body)
	}
	if err != nil {
		writeJSONError(w, asAPIError(err))
		return
	}
	writeJSON(w, out)
}

// requestID returns a fresh request ID, as every AWS response carries one.
func (e *Emulator) requestID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", e.requests)
}

// newID returns a resource ID with the prefix, unique within the emulator. Callers hold e.mu.
func (e *Emulator) newID(prefix string) string {
	e.nextID++
	return fmt.Sprintf("%s-%017x", prefix, e.nextID)
}
