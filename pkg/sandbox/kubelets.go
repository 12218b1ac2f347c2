package sandbox

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/kubernetes/pkg/controller/daemon"
	"k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/kubernetes/pkg/controller/disruption"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/pkg/controller/replicaset"
	"k8s.io/kubernetes/pkg/controller/statefulset"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
	kwokcontrollers "sigs.k8s.io/kwok/pkg/kwok/controllers"
	kwoklog "sigs.k8s.io/kwok/pkg/log"

	"github.com/tailor-sh/tailor/pkg/sandbox/kwokstage"
)

// KwokNodeAnnotation marks the nodes kwok plays the kubelet of; the fake cloud puts it on every
// node it registers.
const KwokNodeAnnotation = "kwok.x-k8s.io/node=fake"

// Kubelets is kwok playing every node's kubelet.
type Kubelets struct {
	log *kwokstage.StageErrorCounter
}

// StageErrors counts the stages kwok failed to play so far on objects still there ("failed to
// apply stage" in its log): pods or nodes whose status a kubelet would have reported and kwok did
// not. None is expected (see kwokstage.StageErrorCounter).
func (k *Kubelets) StageErrors() int64 { return k.log.Count() }

// StartKubelets runs kwok's controller: nodes annotated as fake become Ready, their pods Running,
// and pods being deleted go away, as a kubelet would make them.
func StartKubelets(ctx context.Context, kube kubernetes.Interface) (*Kubelets, error) {
	return startKubelets(ctx, kube, Throughput{}.kwokParallelism())
}

// startKubelets is StartKubelets with kwok playing parallelism stages of nodes, and of pods, at once.
func startKubelets(ctx context.Context, kube kubernetes.Interface, parallelism uint) (*Kubelets, error) {
	nodeInit, err := config.UnmarshalWithType[*internalversion.Stage](nodefast.DefaultNodeInit)
	if err != nil {
		return nil, fmt.Errorf("loading kwok's node stage: %w", err)
	}
	podReady, err := kwokstage.RememberPodIPs(podfast.DefaultPodReady)
	if err != nil {
		return nil, err
	}
	podDelete, err := kwokstage.DeleteOnce(podfast.DefaultPodDelete)
	if err != nil {
		return nil, err
	}
	podDeleteUnfinished, err := kwokstage.FinishDeletion(podfast.DefaultPodDelete)
	if err != nil {
		return nil, err
	}
	var podStages []*internalversion.Stage
	for _, raw := range []string{podReady, withJobRuntime(podfast.DefaultPodComplete), podDelete, podDeleteUnfinished} {
		s, err := config.UnmarshalWithType[*internalversion.Stage](raw)
		if err != nil {
			return nil, fmt.Errorf("loading kwok's pod stages: %w", err)
		}
		podStages = append(podStages, s)
	}
	memo := kwokstage.NewPodIPMemo()
	k := &Kubelets{log: &kwokstage.StageErrorCounter{Out: os.Stderr}}
	ctrl, err := kwokcontrollers.NewController(kwokcontrollers.Config{
		TypedClient:                       kube,
		ManageNodesWithAnnotationSelector: KwokNodeAnnotation,
		LocalStages: map[internalversion.StageResourceRef][]*internalversion.Stage{
			{APIGroup: "v1", Kind: "Node"}: {nodeInit},
			{APIGroup: "v1", Kind: "Pod"}:  podStages,
		},
		CIDR:                      "10.0.0.0/16",
		NodeIP:                    "10.0.0.1",
		NodePlayStageParallelism:  parallelism,
		PodPlayStageParallelism:   parallelism,
		PodsOnNodeSyncParallelism: parallelism,
		FuncMap:                   memo.FuncMap(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the kwok controller: %w", err)
	}
	// kwok logs every status patch; keep its warnings and errors only.
	if err := ctrl.Start(kwoklog.NewContext(ctx, kwoklog.NewLogger(k.log, kwoklog.LevelWarn))); err != nil {
		return nil, err
	}
	return k, nil
}

// JobRuntimeAnnotation, on a Job's pod, is how long it runs before it completes (a Go duration;
// kwok's own annotation for its pod-complete stage). Without it a Job's pod completes as soon as
// it runs, which no real Job does: its node is free again before the nodes launched for its
// siblings are up, and they land there instead.
const JobRuntimeAnnotation = "pod-complete.stage.kwok.x-k8s.io/delay"

// withJobRuntime gives kwok's fast pod-complete stage the delay its general one has, read from
// JobRuntimeAnnotation (none: no delay).
func withJobRuntime(stage string) string {
	delay := "spec:\n  delay:\n    durationMilliseconds: 0\n    durationFrom:\n      expressionFrom: '.metadata.annotations[\"" +
		JobRuntimeAnnotation + "\"]'\n"
	return strings.Replace(stage, "spec:\n", delay, 1)
}

// StartWorkloadControllers runs the Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
// disruption (PodDisruptionBudget status) and resourceclaim controllers, so workloads create pods,
// PDBs allow evictions and pods get the ResourceClaims of their templates as they would in a
// cluster with kube-controller-manager, and the controllers clean-up
// relies on (see clusterControllers), each with t's workers. Volumes are StartVolumeControllers';
// Controllers lists all.
func StartWorkloadControllers(ctx context.Context, cfg *rest.Config, kube kubernetes.Interface, t Throughput) error {
	// Without managed fields, as kube-controller-manager's informers hold objects: no controller
	// reads them, and every copy a controller makes is smaller.
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 10*time.Minute, informers.WithTransform(dropManagedFields))
	dc, err := deployment.NewDeploymentController(ctx, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), kube)
	if err != nil {
		return fmt.Errorf("creating the Deployment controller: %w", err)
	}
	rsc := replicaset.NewReplicaSetController(ctx, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), kube, t.replicaBurst())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))
	scales, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(kube.Discovery()))
	if err != nil {
		return fmt.Errorf("creating the scale client for the disruption controller: %w", err)
	}
	pdbc := disruption.NewDisruptionController(ctx, factory.Core().V1().Pods(), factory.Policy().V1().PodDisruptionBudgets(),
		factory.Core().V1().ReplicationControllers(), factory.Apps().V1().ReplicaSets(), factory.Apps().V1().Deployments(),
		factory.Apps().V1().StatefulSets(), kube, mapper, scales, kube.Discovery())
	ssc := statefulset.NewStatefulSetController(ctx, factory.Core().V1().Pods(), factory.Apps().V1().StatefulSets(),
		factory.Core().V1().PersistentVolumeClaims(), factory.Apps().V1().ControllerRevisions(), kube)
	dsc, err := daemon.NewDaemonSetsController(ctx, factory.Apps().V1().DaemonSets(), factory.Apps().V1().ControllerRevisions(),
		factory.Core().V1().Pods(), factory.Core().V1().Nodes(), kube, flowcontrol.NewBackOff(time.Second, 15*time.Second))
	if err != nil {
		return fmt.Errorf("creating the DaemonSet controller: %w", err)
	}
	// WorkloadWithJob is off by default: no Workload or PodGroup informers.
	jc, err := job.NewController(ctx, kube, factory.Core().V1().Pods(), factory.Batch().V1().Jobs(), nil, nil)
	if err != nil {
		return fmt.Errorf("creating the Job controller: %w", err)
	}
	rcc, err := newResourceClaimController(ctx, kube, factory)
	if err != nil {
		return err
	}
	cluster, err := newClusterControllers(ctx, cfg, kube, factory, mapper)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	cluster.run(ctx)
	w := t.workers()
	go dc.Run(ctx, w)
	go rsc.Run(ctx, w)
	go ssc.Run(ctx, w)
	go dsc.Run(ctx, w)
	go jc.Run(ctx, w)
	go pdbc.Run(ctx)
	go rcc.Run(ctx, w)
	return nil
}
