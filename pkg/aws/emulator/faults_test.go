package emulator_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailor-sh/tailor/pkg/aws/emulator"
)

// TestThrottleEC2For: in the window every EC2 call gets RequestLimitExceeded with HTTP 503, the
// other services answer, and the call log says which calls were throttled; after it, EC2 answers.
func TestThrottleEC2For(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC))
	e, cfg := start(t, emulator.Options{Clock: clk})
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	client, params := ec2.NewFromConfig(cfg), ssm.NewFromConfig(cfg)
	ctx := context.Background()

	e.ThrottleEC2For(10 * time.Second)
	for i := 0; i < 3; i++ {
		_, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
		var re *awshttp.ResponseError
		if errorCode(err) != "RequestLimitExceeded" || !errors.As(err, &re) || re.HTTPStatusCode() != 503 {
			t.Fatalf("call %d in the window: %v, want RequestLimitExceeded with HTTP 503", i, err)
		}
	}
	if _, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id")}); err != nil {
		t.Fatalf("SSM is not throttled with EC2: %v", err)
	}
	clk.Step(10 * time.Second)
	if _, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	var throttled, answered int
	for _, c := range e.CallLog() {
		switch {
		case c.EC2 && c.Throttled:
			throttled++
		case c.EC2:
			answered++
		}
	}
	if throttled != 3 || answered != 1 {
		t.Fatalf("call log: %d EC2 calls throttled and %d answered, want 3 and 1", throttled, answered)
	}
}
