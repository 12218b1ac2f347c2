package provreq

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	autoscalingv1 "github.com/tailor-sh/tailor/pkg/apis/autoscaling/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
	autoscalingclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/autoscaling/v1"
	karpclient "github.com/tailor-sh/tailor/pkg/generated/clientset/versioned/typed/karpenter/v1"
	autoscalinglisters "github.com/tailor-sh/tailor/pkg/generated/listers/autoscaling/v1"
	karplisters "github.com/tailor-sh/tailor/pkg/generated/listers/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/provision/planner"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// world is a controller over listers the test fills and clients that record what it writes; no
// API server is needed to decide conditions.
type world struct {
	t         *testing.T
	c         *Controller
	clock     *clocktesting.FakeClock
	requests  cache.Indexer
	templates cache.Indexer
	claims    cache.Indexer
	nodes     cache.Indexer
	status    *statusWriter
	nodeClaim *claimWriter
	// plan is what the planner answers, given the pods and whether launching is allowed.
	plan    func(pods []*corev1.Pod, launch bool) *planner.Plan
	planned []bool
	// held are the NodePools the planner says cannot launch for now.
	held []string
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, clock: clocktesting.NewFakeClock(start),
		requests:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		templates: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		claims:    cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		nodes:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		status:    &statusWriter{}, nodeClaim: &claimWriter{}}
	w.nodeClaim.claims = w.claims
	w.status.indexer = w.requests
	claimLister := karplisters.NewNodeClaimLister(w.claims)
	w.c = &Controller{opts: Options{
		Requests:      w.status,
		RequestLister: autoscalinglisters.NewProvisioningRequestLister(w.requests),
		Templates:     corelisters.NewPodTemplateLister(w.templates),
		NodeClaims:    w.nodeClaim,
		ClaimLister:   claimLister,
		Plan: func(_ context.Context, pods []*corev1.Pod, launch bool) (*planner.Plan, []string, error) {
			w.planned = append(w.planned, launch)
			return w.plan(pods, launch), w.held, nil
		},
		Bookings:    NewBookings(claimLister, corelisters.NewNodeLister(w.nodes)),
		Clock:       w.clock,
		BookingTime: DefaultBookingTime,
	}}
	return w
}

// reconcile runs one step for the request and returns the request as written (or as it was).
func (w *world) reconcile(name string) (*autoscalingv1.ProvisioningRequest, time.Duration) {
	w.t.Helper()
	requeue, err := w.c.reconcile(context.Background(), "team/"+name)
	if err != nil {
		w.t.Fatalf("reconcile %s: %v", name, err)
	}
	obj, _, _ := w.requests.GetByKey("team/" + name)
	req, _ := obj.(*autoscalingv1.ProvisioningRequest)
	return req, requeue
}

func (w *world) addTemplate(name string, cpu string) {
	_ = w.templates.Add(&corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"job": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}})
}

func (w *world) addRequest(name, class, template string, count int32) {
	_ = w.requests.Add(&autoscalingv1.ProvisioningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", UID: k8stypes.UID("uid-" + name), CreationTimestamp: metav1.NewTime(start)},
		Spec: autoscalingv1.ProvisioningRequestSpec{ProvisioningClassName: class,
			PodSets: []autoscalingv1.PodSet{{PodTemplateRef: autoscalingv1.Reference{Name: template}, Count: count}}}})
}

func condition(req *autoscalingv1.ProvisioningRequest, typ string) *metav1.Condition {
	return meta.FindStatusCondition(req.Status.Conditions, typ)
}

// expectCondition checks a condition's status and reason, and that its message holds fragment.
func expectCondition(t *testing.T, req *autoscalingv1.ProvisioningRequest, typ string, status metav1.ConditionStatus, reason, fragment string) {
	t.Helper()
	c := condition(req, typ)
	if c == nil {
		t.Fatalf("no %s condition; have %+v", typ, req.Status.Conditions)
	}
	if c.Status != status || c.Reason != reason || !strings.Contains(c.Message, fragment) {
		t.Fatalf("%s = %s/%s %q, want %s/%s containing %q", typ, c.Status, c.Reason, c.Message, status, reason, fragment)
	}
}

// statusWriter stores UpdateStatus calls in the request indexer, as the API server and informer
// would.
type statusWriter struct {
	autoscalingclient.ProvisioningRequestInterface
	indexer cache.Indexer
	writes  int
}

func (s *statusWriter) ProvisioningRequests(string) autoscalingclient.ProvisioningRequestInterface {
	return s
}

func (s *statusWriter) UpdateStatus(_ context.Context, req *autoscalingv1.ProvisioningRequest, _ metav1.UpdateOptions) (*autoscalingv1.ProvisioningRequest, error) {
	s.writes++
	return req, s.indexer.Update(req.DeepCopy())
}

// claimWriter creates and deletes NodeClaims in the claim indexer.
type claimWriter struct {
	karpclient.NodeClaimInterface
	claims  cache.Indexer
	created []*karpv1.NodeClaim
	deleted []string
}

func (c *claimWriter) Create(_ context.Context, nc *karpv1.NodeClaim, _ metav1.CreateOptions) (*karpv1.NodeClaim, error) {
	nc = nc.DeepCopy()
	nc.Name = fmt.Sprintf("%s%d", nc.GenerateName, len(c.created))
	c.created = append(c.created, nc)
	return nc, c.claims.Add(nc)
}

func (c *claimWriter) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	obj, ok, _ := c.claims.GetByKey(name)
	if !ok {
		return apierrors.NewNotFound(karpv1.Resource("nodeclaims"), name)
	}
	c.deleted = append(c.deleted, name)
	return c.claims.Delete(obj)
}

// plannedClaim is a new claim in NodePool "default" for pods.
func plannedClaim(pods ...*corev1.Pod) *planner.PlannedClaim {
	it := &cloud.InstanceType{Name: "m5.xlarge"}
	return &planner.PlannedClaim{NodePool: &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, Pods: pods,
		Options: []planner.Option{{InstanceType: it, Offering: cloud.Offering{Zone: "zone-a", CapacityType: karpv1.CapacityTypeOnDemand}}}}
}

func emptyPlan() *planner.Plan {
	return &planner.Plan{InFlight: map[string][]*corev1.Pod{}, FitsExistingOn: map[k8stypes.UID]string{}}
}
