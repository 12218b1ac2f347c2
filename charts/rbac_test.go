package charts

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// grants is every permission the chart's own Roles and ClusterRoles give, with the reason for it.
// A change to the chart's RBAC must change this table, and say why. "cluster" is cluster-wide,
// "ns" the release's namespace; a name after the verb means the rule names that object alone.
var grants = map[string]string{
	"cluster karpenter.sh nodepools get":                                              "the provisioner plans from NodePools",
	"cluster karpenter.sh nodepools list":                                             "the provisioner plans from NodePools",
	"cluster karpenter.sh nodepools watch":                                            "the provisioner plans from NodePools",
	"cluster karpenter.sh nodepools patch":                                            "stamps karpenter.sh/nodepool-hash, which drift compares",
	"cluster karpenter.sh nodepools/status update":                                    "writes the NodePool's Ready and NodeClassReady conditions",
	"cluster karpenter.sh nodeclaims get":                                             "reads back the claims it launched",
	"cluster karpenter.sh nodeclaims list":                                            "reads back the claims it launched",
	"cluster karpenter.sh nodeclaims watch":                                           "reads back the claims it launched",
	"cluster karpenter.sh nodeclaims create":                                          "launching capacity is creating a NodeClaim",
	"cluster karpenter.sh nodeclaims update":                                          "the termination finalizer and the launched instance's details",
	"cluster karpenter.sh nodeclaims patch":                                           "the NodePool hash stamp and the disruption reason",
	"cluster karpenter.sh nodeclaims delete":                                          "failed launches, unregistered, consolidated, expired and interrupted nodes",
	"cluster karpenter.sh nodeclaims/status update":                                   "the Launched, Registered, Initialized, Drifted and Consolidatable conditions",
	"cluster karpenter.k8s.aws ec2nodeclasses get":                                    "launches resolve their subnets, security groups and AMIs",
	"cluster karpenter.k8s.aws ec2nodeclasses list":                                   "launches resolve their subnets, security groups and AMIs",
	"cluster karpenter.k8s.aws ec2nodeclasses watch":                                  "launches resolve their subnets, security groups and AMIs",
	"cluster karpenter.k8s.aws ec2nodeclasses patch":                                  "stamps karpenter.k8s.aws/ec2nodeclass-hash, which drift compares",
	"cluster karpenter.k8s.aws ec2nodeclasses/status update":                          "writes what the class resolved to, and Ready",
	"cluster core nodes patch":                                                        "syncs a claim's labels and taints, lifts karpenter.sh/unregistered, taints karpenter.sh/disrupted, holds the termination finalizer",
	"cluster core nodes delete":                                                       "removes a node whose NodeClaim or instance is gone",
	"cluster core pods/eviction create":                                               "drains through the Eviction API, so PodDisruptionBudgets hold",
	"cluster apps daemonsets list":                                                    "the DaemonSet pods a new node will run count in its plan",
	"cluster apps daemonsets watch":                                                   "the DaemonSet pods a new node will run count in its plan",
	"cluster autoscaling.x-k8s.io provisioningrequests get":                           "answers ProvisioningRequests (Kueue's provisioning admission check)",
	"cluster autoscaling.x-k8s.io provisioningrequests list":                          "answers ProvisioningRequests (Kueue's provisioning admission check)",
	"cluster autoscaling.x-k8s.io provisioningrequests watch":                         "answers ProvisioningRequests (Kueue's provisioning admission check)",
	"cluster autoscaling.x-k8s.io provisioningrequests/status update":                 "writes their Accepted, Provisioned, Failed and BookingExpired conditions",
	"cluster core podtemplates get":                                                   "a ProvisioningRequest's pods are shaped by the PodTemplates it names",
	"cluster core podtemplates list":                                                  "a ProvisioningRequest's pods are shaped by the PodTemplates it names",
	"cluster core podtemplates watch":                                                 "a ProvisioningRequest's pods are shaped by the PodTemplates it names",
	"cluster admissionregistration.k8s.io mutatingwebhookconfigurations get tailor":   "reads its own webhook configuration's caBundle",
	"cluster admissionregistration.k8s.io mutatingwebhookconfigurations patch tailor": "writes its own certificate's CA into that caBundle",
	"ns coordination.k8s.io leases get tailor":                                        "leader election on its own Lease",
	"ns coordination.k8s.io leases update tailor":                                     "leader election on its own Lease",
	"ns core secrets create":                                                          "creates the webhook certificate's Secret; create cannot be limited to a name",
	"ns core secrets list":                                                            "watches that Secret, which another replica may have rotated",
	"ns core secrets watch":                                                           "watches that Secret, which another replica may have rotated",
	"ns core secrets get tailor-webhook-cert":                                         "reads the webhook certificate",
	"ns core secrets update tailor-webhook-cert":                                      "rotates the webhook certificate",
}

// builtIn are the roles Kubernetes ships that the chart binds, with the reason. Their rules are
// the API server's (bootstrap policy); TestChartOnAPIServer asks it what they allow.
var builtIn = map[string]string{
	"ClusterRole system:kube-scheduler": "Tailor is kube-scheduler. Tailor's own code also relies on it for deleting pods past " +
		"terminationGracePeriod, nominating pods (pods/status), reading PodDisruptionBudgets, VolumeAttachments and " +
		"the kube-dns Service, writing Events, and creating its Lease",
	"ClusterRole system:volume-scheduler":                        "kube-scheduler's volume binding plugin",
	"Role kube-system/extension-apiserver-authentication-reader": "kube-scheduler's secure port authenticates by delegation, with the client CA kept there",
}

// rule is one rendered PolicyRule and where it comes from.
type rule struct {
	rbacv1.PolicyRule
	from  string
	scope string // cluster, or the namespace of a Role
}

func rules(t *testing.T, r *rendered) []rule {
	t.Helper()
	var out []rule
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, obj := range r.ofKind(kind) {
			role := &rbacv1.Role{} // a ClusterRole's rules decode the same; aggregation is not used
			if kind == "ClusterRole" {
				cr := &rbacv1.ClusterRole{}
				typed(t, obj, cr)
				if cr.AggregationRule != nil {
					t.Errorf("ClusterRole %s aggregates other roles; its grants could not be listed", cr.Name)
				}
				role.Rules = cr.Rules
			} else {
				typed(t, obj, role)
			}
			scope := "cluster"
			if kind == "Role" {
				scope = obj.GetNamespace()
			}
			for _, pr := range role.Rules {
				out = append(out, rule{PolicyRule: pr, from: kind + " " + obj.GetName(), scope: scope})
			}
		}
	}
	return out
}

// granted lists every (scope, group, resource, verb, name) the rules give, in the table's
// notation, and the wildcards and non-resource URLs it must not hold.
func granted(t *testing.T, r *rendered) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, rl := range rules(t, r) {
		for _, field := range [][]string{rl.APIGroups, rl.Resources, rl.Verbs, rl.ResourceNames} {
			if slices.ContainsFunc(field, func(s string) bool { return strings.Contains(s, "*") }) {
				t.Errorf("%s grants a wildcard: %+v", rl.from, rl.PolicyRule)
			}
		}
		if len(rl.NonResourceURLs) > 0 {
			t.Errorf("%s grants non-resource URLs %v", rl.from, rl.NonResourceURLs)
		}
		scope := rl.scope
		if scope == r.release.namespace {
			scope = "ns"
		} else if scope != "cluster" {
			t.Errorf("%s grants in namespace %s, outside the release's", rl.from, scope)
		}
		names := rl.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range rl.APIGroups {
			if g == "" {
				g = "core"
			}
			for _, res := range rl.Resources {
				for _, v := range rl.Verbs {
					for _, n := range names {
						out[strings.TrimSpace(fmt.Sprintf("%s %s %s %s %s", scope, g, res, v, n))] = true
					}
				}
			}
		}
	}
	return out
}

func TestRBACGrantsAreListedWithReasons(t *testing.T) {
	r := render(t, release{values: required})
	got := granted(t, r)
	for g := range got {
		if _, ok := grants[g]; !ok {
			t.Errorf("the chart grants %q, which the table in rbac_test.go does not list: add it with the reason", g)
		}
	}
	for _, g := range slices.Sorted(maps.Keys(grants)) {
		if !got[g] {
			t.Errorf("the table lists %q, which the chart no longer grants: remove it", g)
		}
	}

	// Every binding gives a rendered role or a listed built-in one to Tailor's ServiceAccount alone.
	want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "tailor", Namespace: "tailor"}}
	bound := map[string]bool{}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, obj := range r.ofKind(kind) {
			b := &rbacv1.RoleBinding{}
			if kind == "ClusterRoleBinding" {
				crb := &rbacv1.ClusterRoleBinding{}
				typed(t, obj, crb)
				b.Subjects, b.RoleRef = crb.Subjects, crb.RoleRef
			} else {
				typed(t, obj, b)
			}
			if !slices.Equal(b.Subjects, want) {
				t.Errorf("%s %s binds %+v, want only %+v", kind, obj.GetName(), b.Subjects, want)
			}
			ref := b.RoleRef.Kind + " " + b.RoleRef.Name
			if b.RoleRef.Kind == "Role" && obj.GetNamespace() != r.release.namespace {
				ref = fmt.Sprintf("Role %s/%s", obj.GetNamespace(), b.RoleRef.Name)
			}
			if r.lookup(b.RoleRef.Kind, b.RoleRef.Name) != nil && (b.RoleRef.Kind == "ClusterRole" || obj.GetNamespace() == r.release.namespace) {
				continue
			}
			if _, ok := builtIn[ref]; !ok {
				t.Errorf("%s %s binds %s, which is neither rendered nor listed with a reason in builtIn", kind, obj.GetName(), ref)
			}
			bound[ref] = true
		}
	}
	for ref := range builtIn {
		if !bound[ref] {
			t.Errorf("builtIn lists %s, which the chart no longer binds", ref)
		}
	}
}
