package emulator_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/tailor-sh/tailor/pkg/aws/emulator"
)

// TestSQSDeleteMessageBatch: each entry of a batch is deleted or fails on its own, as in SQS; a
// batch of more than ten or with a repeated Id is refused whole (the SDK itself refuses an empty one).
func TestSQSDeleteMessageBatch(t *testing.T) {
	e, cfg := start(t, emulator.Options{})
	client := sqs.NewFromConfig(cfg)
	ctx := context.Background()
	url := aws.String(e.CreateQueue("interruptions"))
	for i := range 3 {
		if _, err := e.SendMessage("interruptions", fmt.Sprintf(`{"n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10})
	if err != nil || len(got.Messages) != 3 {
		t.Fatalf("receive: %+v, %v", got, err)
	}
	entries := []sqstypes.DeleteMessageBatchRequestEntry{{Id: aws.String("a"), ReceiptHandle: got.Messages[0].ReceiptHandle},
		{Id: aws.String("stale"), ReceiptHandle: aws.String("msg-nope#1")}, {Id: aws.String("b"), ReceiptHandle: got.Messages[1].ReceiptHandle}}
	out, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: url, Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 2 || aws.ToString(out.Successful[0].Id) != "a" || aws.ToString(out.Successful[1].Id) != "b" ||
		len(out.Failed) != 1 || aws.ToString(out.Failed[0].Id) != "stale" || aws.ToString(out.Failed[0].Code) != "ReceiptHandleIsInvalid" {
		t.Errorf("DeleteMessageBatch = %+v", out)
	}
	if visible, inFlight := e.QueueDepth("interruptions"); visible+inFlight != 1 {
		t.Errorf("%d visible and %d in flight after deleting two of three, want one left", visible, inFlight)
	}
	for name, entries := range map[string][]sqstypes.DeleteMessageBatchRequestEntry{
		"AWS.SimpleQueueService.TooManyEntriesInBatchRequest": slices.Repeat([]sqstypes.DeleteMessageBatchRequestEntry{{Id: aws.String("x"), ReceiptHandle: aws.String("r")}}, 11),
		"AWS.SimpleQueueService.BatchEntryIdsNotDistinct":     {{Id: aws.String("x"), ReceiptHandle: got.Messages[2].ReceiptHandle}, {Id: aws.String("x"), ReceiptHandle: aws.String("r")}},
	} {
		if _, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: url, Entries: entries}); errorCode(err) != name {
			t.Errorf("want %s, got %v", name, err)
		}
	}
	if visible, inFlight := e.QueueDepth("interruptions"); visible+inFlight != 1 {
		t.Errorf("a refused batch deleted something: %d visible and %d in flight", visible, inFlight)
	}
}
