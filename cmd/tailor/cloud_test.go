package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	tailoraws "github.com/tailor-sh/tailor/pkg/aws"
	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/interruption/eventbridge"
)

// TestInterruptSendsANotice: `tailor sandbox interrupt` finds the emulator beside the kubeconfig
// and puts a notice on the sandbox's queue that the consumer reads as the kind asked for.
func TestInterruptSendsANotice(t *testing.T) {
	emu := emulator.Start(emulator.Options{ClusterName: sandboxClusterName})
	defer emu.Close()
	url := emu.CreateQueue(sandboxQueue)
	cfg, err := tailoraws.SDKConfig(context.Background(), tailoraws.Options{Endpoint: emu.URL()})
	if err != nil {
		t.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := interrupt(context.Background(), &interruptFlags{kubeconfig: kubeconfig, node: "i-0123456789abcdef0", kind: "spot"}); err == nil {
		t.Fatal("interrupt without a running sandbox succeeded")
	}
	if err := os.WriteFile(filepath.Join(dir, endpointFile), []byte(emu.URL()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[string]eventbridge.Kind{"spot": eventbridge.KindSpotInterruption, "rebalance": eventbridge.KindRebalanceRecommendation,
		"health": eventbridge.KindScheduledChange, "state-change": eventbridge.KindInstanceStopping} {
		if err := interrupt(context.Background(), &interruptFlags{kubeconfig: kubeconfig, node: "i-0123456789abcdef0", kind: kind, state: "stopped"}); err != nil {
			t.Fatalf("--kind %s: %v", kind, err)
		}
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("--kind %s: received %d messages, %v", kind, len(out.Messages), err)
		}
		body := aws.ToString(out.Messages[0].Body)
		if _, err := client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
		events, err := eventbridge.Parse(body)
		if err != nil || len(events) != 1 || events[0].Kind != want || events[0].InstanceID != "i-0123456789abcdef0" {
			t.Errorf("--kind %s sent %s, read as %+v, %v", kind, body, events, err)
		}
	}
	if err := interrupt(context.Background(), &interruptFlags{kubeconfig: kubeconfig, node: "i-1", kind: "meteor"}); err == nil {
		t.Error("an unknown --kind was accepted")
	}
}
