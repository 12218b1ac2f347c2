package provisioning

import (
	"bufio"
	"cmp"
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	tailorinformers "github.com/tailor-sh/tailor/pkg/generated/informers/externalversions"
	tailormetrics "github.com/tailor-sh/tailor/pkg/metrics"
	"github.com/tailor-sh/tailor/pkg/sandbox"
)

// claimWatch follows NodeClaims through an informer: how many exist, the most at once, when the
// count last changed, and when each claim was seen chosen, drained and gone (see claimTimes).
type claimWatch struct {
	store     cache.Store
	mu        sync.Mutex
	n, max    int
	changedAt time.Time
	times     map[string]*claimTimes
}

func watchClaims(ctx context.Context, cluster *sandbox.Cluster) *claimWatch {
	w := &claimWatch{changedAt: time.Now(), times: map[string]*claimTimes{}}
	factory := tailorinformers.NewSharedInformerFactory(cluster.Tailor, 0)
	inf := factory.Karpenter().V1().NodeClaims().Informer()
	w.store = inf.GetStore()
	// change counts d claims more and records what obj shows of the claim's removal.
	change := func(obj any, d int) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		claim, ok := obj.(*karpv1.NodeClaim)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		t := w.times[claim.Name]
		if t == nil {
			t = &claimTimes{}
			w.times[claim.Name] = t
		}
		t.observe(claim, now)
		if d < 0 {
			t.gone = now
		}
		if d != 0 {
			w.n += d
			w.max = max(w.max, w.n)
			w.changedAt = now
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { change(o, 1) },
		UpdateFunc: func(_, o any) { change(o, 0) },
		DeleteFunc: func(o any) { change(o, -1) },
	})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return w
}

func (w *claimWatch) count() int { w.mu.Lock(); defer w.mu.Unlock(); return w.n }

func (w *claimWatch) peak() int { w.mu.Lock(); defer w.mu.Unlock(); return w.max }

func (w *claimWatch) lastChange() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changedAt
}

func (w *claimWatch) deleting() int {
	n := 0
	for _, o := range w.store.List() {
		if o.(*karpv1.NodeClaim).DeletionTimestamp != nil {
			n++
		}
	}
	return n
}

// pdbWatch keeps every status of the budget that falls short of what it requires. Tailor evicts
// through the Eviction API, which refuses what the budget does not allow, so only a pod removed
// around it (a node deleted undrained) shows up here.
type pdbWatch struct {
	mu         sync.Mutex
	violations []string
	cancel     context.CancelFunc
}

func watchPDB(b *testing.B, ctx context.Context, cluster *sandbox.Cluster) *pdbWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &pdbWatch{cancel: cancel}
	inf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(cluster.Kube.PolicyV1().RESTClient(), "poddisruptionbudgets", "default", fields.Everything()),
		&policyv1.PodDisruptionBudget{}, 0, cache.Indexers{})
	check := func(o any) {
		pdb := o.(*policyv1.PodDisruptionBudget)
		st := pdb.Status
		if st.ObservedGeneration < pdb.Generation || st.CurrentHealthy >= st.DesiredHealthy {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.violations = append(w.violations, fmt.Sprintf("at %s: currentHealthy %d < desiredHealthy %d (expectedPods %d)",
			time.Now().Format("15:04:05.000"), st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods))
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: check, UpdateFunc: func(_, o any) { check(o) }})
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("the PodDisruptionBudget informer did not sync")
	}
	return w
}

func (w *pdbWatch) stop() []string {
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations)
}

// heapWatch samples the Go heap's live objects twice a second and keeps the most seen: the whole
// process's heap, the API server's, etcd's and kwok's with Tailor's, since all run in it.
type heapWatch struct{ max atomic.Uint64 }

func sampleHeap(ctx context.Context) *heapWatch {
	w := &heapWatch{}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > w.max.Load() {
				w.max.Store(v)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return w
}

func (w *heapWatch) peak() uint64 { return w.max.Load() }

// procStatusKB reads a field of /proc/self/status in kB (VmHWM: the most resident memory the
// process ever had, API server and etcd included); 0 where there is none.
func procStatusKB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// tailorEvents counts Tailor's Stranded and Unused events: a pod left pending beside capacity
// launched for it, or a node launched for nothing.
func tailorEvents(ctx context.Context, cluster *sandbox.Cluster) string {
	var out []string
	for _, reason := range []string{"Stranded", "Unused"} {
		events, err := cluster.Kube.EventsV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", reason, err))
			continue
		}
		out = append(out, fmt.Sprintf("%s %d", reason, len(events.Items)))
	}
	return strings.Join(out, ", ")
}

// eventsByReason tallies the Events in the cluster by who reported them, the kind of object they
// are about and their reason, each counted as often as it happened (a series counts each of its
// occurrences), most frequent first: what the requests' "POST events" and "PATCH events" were.
func eventsByReason(ctx context.Context, cluster *sandbox.Cluster) string {
	events, err := cluster.Kube.EventsV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	counts := map[string]int{}
	for _, ev := range events.Items {
		n := 1
		if ev.Series != nil {
			n = int(ev.Series.Count)
		} else if ev.DeprecatedCount > 1 {
			n = int(ev.DeprecatedCount)
		}
		who := ev.ReportingController
		if who == "" {
			who = ev.DeprecatedSource.Component
		}
		counts[fmt.Sprintf("%s %s %s", who, ev.Regarding.Kind, ev.Reason)] += n
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b))
	})
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(out, "; ")
}

// countingProxy stands between tailor-scheduler and the API server and counts its requests by
// method and resource. A proxy and not client-go's request metrics: those are process-wide, and
// the workload controllers, kwok and the benchmark's own clients share the process.
type countingProxy struct {
	srv   *httptest.Server
	total atomic.Int64
	// lastBinding is when tailor-scheduler last posted a binding (Unix nanoseconds): with kwok
	// playing every kubelet of the fleet in one process, pods run well after they bind, and the
	// difference is kwok's, not Tailor's.
	lastBinding atomic.Int64
	mu          sync.Mutex
	// counts are keyed "METHOD resource[/subresource]", WATCH for a GET that watches.
	counts map[string]int
	// took is, by the same key (watches left out), how long the API server took to answer and
	// how many of the answers were a conflict: a slow answer holds a worker of Tailor's, and a
	// conflict sends its object back through the queue's backoff.
	took map[string]*requestTimes
}

// requestTimes sums the answers to one kind of request.
type requestTimes struct {
	n, conflicts int
	total, most  time.Duration
}

// start is sandbox.Options.SchedulerConfig: it starts the proxy in front of cfg's API server and
// returns a config that reaches the proxy, with the same credentials.
func (p *countingProxy) start(cfg *rest.Config) (*rest.Config, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1 // watches stream
	rp.ErrorLog = log.New(io.Discard, "", 0)
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := p.count(r)
		if strings.HasPrefix(key, "WATCH ") {
			rp.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		began := time.Now()
		rp.ServeHTTP(rec, r)
		p.answered(key, time.Since(began), rec.code)
	}))
	p.srv.EnableHTTP2 = true
	p.srv.StartTLS()
	out := rest.CopyConfig(cfg)
	out.Host = p.srv.URL
	out.CAData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	out.CAFile, out.ServerName = "", ""
	return out, nil
}

func (p *countingProxy) close() {
	if p.srv != nil {
		p.srv.CloseClientConnections()
		p.srv.Close()
	}
}

// statusRecorder keeps the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

// Unwrap lets the reverse proxy flush through the recorder (http.ResponseController).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (p *countingProxy) answered(key string, took time.Duration, code int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.took == nil {
		p.took = map[string]*requestTimes{}
	}
	t := p.took[key]
	if t == nil {
		t = &requestTimes{}
		p.took[key] = t
	}
	t.n++
	t.total += took
	t.most = max(t.most, took)
	if code == http.StatusConflict {
		t.conflicts++
	}
}

// latencies lists the n kinds of request that took the API server longest in all, with their
// mean and longest answer and their conflicts, most first.
func (p *countingProxy) latencies(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := slices.SortedFunc(maps.Keys(p.took), func(a, b string) int { return cmp.Compare(p.took[b].total, p.took[a].total) })
	var out []string
	for _, k := range keys[:min(n, len(keys))] {
		t := p.took[k]
		out = append(out, fmt.Sprintf("%s %d, mean %.0f ms, longest %.0f ms, %d conflicts", k, t.n,
			float64(t.total.Milliseconds())/float64(t.n), float64(t.most.Milliseconds()), t.conflicts))
	}
	return strings.Join(out, "; ")
}

func (p *countingProxy) count(r *http.Request) string {
	method := r.Method
	if method == http.MethodGet && r.URL.Query().Get("watch") == "true" {
		method = "WATCH"
	}
	key := method + " " + resourceOf(r.URL.Path)
	p.total.Add(1)
	if key == "POST pods/binding" {
		p.lastBinding.Store(time.Now().UnixNano())
	}
	p.mu.Lock()
	p.counts[key]++
	p.mu.Unlock()
	return key
}

func (p *countingProxy) get(key string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int64(p.counts[key])
}

// top lists the n most frequent kinds of request, most first.
func (p *countingProxy) top(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := slices.SortedFunc(maps.Keys(p.counts), func(a, b string) int { return p.counts[b] - p.counts[a] })
	var out []string
	for _, k := range keys[:min(n, len(keys))] {
		out = append(out, fmt.Sprintf("%s %d", k, p.counts[k]))
	}
	return strings.Join(out, ", ")
}

// resourceOf names the resource of an API path: /api/v1/namespaces/ns/pods/name/binding is
// pods/binding, /apis/karpenter.sh/v1/nodeclaims/x is nodeclaims.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "discovery"
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

// planning is what tailor-scheduler's provisioner has planned so far, read from its metrics (the
// sandbox runs it in this process): rounds that planned pods, and seconds spent planning them;
// rounds that read the cluster and found nothing to plan (idle), and rounds that did not read it
// (quiet).
type planning struct {
	rounds, idle, quiet int
	seconds             float64
}

func planningSoFar(b *testing.B) planning {
	var h dto.Metric
	if err := tailormetrics.PlanDuration.Write(&h); err != nil {
		b.Fatal(err)
	}
	rounds := func(outcome string) int {
		return int(testutil.ToFloat64(tailormetrics.ProvisionerRounds.WithLabelValues(outcome)))
	}
	return planning{rounds: rounds("planned"), idle: rounds("idle"), quiet: rounds("quiet"), seconds: h.GetHistogram().GetSampleSum()}
}

func (p planning) since(before planning) planning {
	return planning{rounds: p.rounds - before.rounds, idle: p.idle - before.idle, quiet: p.quiet - before.quiet, seconds: p.seconds - before.seconds}
}
