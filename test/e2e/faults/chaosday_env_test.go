package faults

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/interruption"
	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
	"github.com/tailor-sh/tailor/pkg/cloud"
	"github.com/tailor-sh/tailor/pkg/sandbox"
	"github.com/tailor-sh/tailor/pkg/sandbox/awscloud"
	"github.com/tailor-sh/tailor/test/e2e/env"
)

// chaosDayEnv is a cluster on the AWS provider over the emulator whose one Tailor replica builds
// its provider anew at every start, as a restarted process would: the launch-template and
// resolution caches, the unavailable offerings and the SQS consumer all go with the old one.
type chaosDayEnv struct {
	*env.Env
	emu *emulator.Emulator
	// restarts counts the restarts the day has made.
	restarts atomic.Int32
}

// chaosDayArgs are Tailor's args for the day: Karpenter's 15 s validation and 10 s poll would
// make every phase wait; the decisions themselves are the same.
var chaosDayArgs = sandbox.QuickDisruptionArgs()

func newChaosDayEnv(t *testing.T) *chaosDayEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e tests start a control plane; skipped in -short mode")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background())
	e := &chaosDayEnv{Env: &env.Env{T: t, Ctx: ctx, Clock: &sandbox.OffsetClock{}}}
	aws := awscloud.Start(awscloud.Options{Clock: e.Clock, ClusterName: env.AWSCluster, Queue: env.AWSQueue,
		Provider: tailoraws.Options{RetryMaxBackoff: 100 * time.Millisecond}})
	e.emu = aws.Emulator
	t.Cleanup(aws.Close)
	newProvider := func(k kubernetes.Interface) cloud.CloudProvider {
		aws.Bind(k)
		p, err := aws.NewProvider(ctx)
		if err != nil {
			// The options are the test's own; only a broken SDK configuration gets here.
			panic(fmt.Sprintf("a new replica: %v", err))
		}
		return p
	}
	e.StartCluster(ctx, cancel, sandbox.Options{Dir: t.TempDir(), Clock: e.Clock, TailorArgs: chaosDayArgs,
		CloudPerReplica: true, NewCloud: newProvider}, nil)
	return e
}

// restart stops Tailor wherever it is in its work, with nothing written on the way out, and
// starts a fresh replica with a fresh provider.
func (e *chaosDayEnv) restart(why string) {
	e.T.Helper()
	n := e.restarts.Add(1)
	e.T.Logf("restart %d: %s", n, why)
	if err := e.Cluster.RestartScheduler(e.Ctx); err != nil {
		e.T.Fatalf("restart %d (%s): %v", n, why, err)
	}
}

// sendSpotNotice puts a spot interruption warning for the instance on the interruption queue,
// as EventBridge would.
func (e *chaosDayEnv) sendSpotNotice(providerID string) {
	e.T.Helper()
	instanceID := providerID[strings.LastIndex(providerID, "/")+1:]
	cfg, err := tailoraws.SDKConfig(e.Ctx, tailoraws.Options{Endpoint: e.emu.URL()})
	if err != nil {
		e.T.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	url, err := interruption.QueueURL(e.Ctx, client, env.AWSQueue)
	if err != nil {
		e.T.Fatal(err)
	}
	body, err := eventbridge.Message(eventbridge.Notice{Kind: eventbridge.KindSpotInterruption, InstanceID: instanceID,
		Region: emulator.Region, Account: emulator.AccountID, Time: e.Clock.Now()})
	if err != nil {
		e.T.Fatal(err)
	}
	if _, err := client.SendMessage(e.Ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
		e.T.Fatalf("sending the spot notice for %s: %v", instanceID, err)
	}
}
