package emulator_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/sdkhttp"
)

// ec2Calls are the EC2 actions the emulator serves, each made with the real SDK. The seeds
// are the requests these calls send; the response check replays a response to the same call.
var ec2Calls = map[string]func(context.Context, *ec2.Client) error{
	"DescribeInstanceTypes": func(ctx context.Context, c *ec2.Client) error {
		_, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(5),
			Filters: []ec2types.Filter{{Name: aws.String("processor-info.supported-architecture"), Values: []string{"x86_64"}}}})
		return err
	},
	"DescribeInstanceTypeOfferings": func(ctx context.Context, c *ec2.Client) error {
		_, err := c.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone})
		return err
	},
	"DescribeSpotPriceHistory": func(ctx context.Context, c *ec2.Client) error {
		_, err := c.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{ProductDescriptions: []string{"Linux/UNIX"}, InstanceTypes: []ec2types.InstanceType{"m5.large"}})
		return err
	},
	"DescribeSubnets": func(ctx context.Context, c *ec2.Client) error {
		_, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"tailor"}}}})
		return err
	},
	"DescribeSecurityGroups": func(ctx context.Context, c *ec2.Client) error {
		_, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{"karpenter.sh/discovery"}}}})
		return err
	},
	"DescribeImages": func(ctx context.Context, c *ec2.Client) error {
		_, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{"amazon-eks-node-al2023-*"}}}})
		return err
	},
	"CreateLaunchTemplate": func(ctx context.Context, c *ec2.Client) error {
		_, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("tailor/fuzz"),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000001"),
				UserData: aws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\n"))), SecurityGroupIds: []string{"sg-00000000000000001"}}})
		return err
	},
	"DescribeLaunchTemplates": func(ctx context.Context, c *ec2.Client) error {
		_, err := c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"tailor/fuzz"}})
		return err
	},
	"DeleteLaunchTemplate": func(ctx context.Context, c *ec2.Client) error {
		_, err := c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("tailor/gone")})
		return err
	},
	"CreateFleet": func(ctx context.Context, c *ec2.Client) error {
		_, err := c.CreateFleet(ctx, fleetInput("fuzz-token"))
		return err
	},
	"DescribeInstances": func(ctx context.Context, c *ec2.Client) error {
		_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
			{Name: aws.String("tag:kubernetes.io/cluster/tailor"), Values: []string{"owned"}}, {Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}}})
		return err
	},
	"TerminateInstances": func(ctx context.Context, c *ec2.Client) error {
		_, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-00000000000000001"}})
		return err
	},
}

// FuzzEC2Request sends arbitrary Query-protocol requests to the emulator, seeded with what the
// real SDK sends for every action it serves. Properties: no panic; a success is the action's
// XML response with a request ID; a failure is EC2's XML error (a code, a message, a 4xx or
// 503 status), never an internal error, since AWS tells the caller what was wrong; and the real
// SDK decodes whatever came back, success or error, for the action it was sent for.
func FuzzEC2Request(f *testing.F) {
	e, cfg := start(f, emulator.Options{})
	var mu sync.Mutex
	var captured []string
	capture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		captured = append(captured, string(body))
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		e.ServeHTTP(w, r)
	}))
	defer capture.Close()
	seedCfg := cfg.Copy()
	seedCfg.BaseEndpoint = aws.String(capture.URL)
	seedClient := ec2.NewFromConfig(seedCfg)
	for _, action := range sortedActions() {
		_ = ec2Calls[action](context.Background(), seedClient) // errors are seeds too
	}
	for _, body := range captured {
		f.Add(body)
	}
	f.Add("Action=DescribeInstances&Version=2016-11-15&MaxResults=abc&NextToken=%%%")
	f.Add("Action=CreateFleet&Version=2016-11-15&TargetCapacitySpecification.TotalTargetCapacity=-1")

	// replay answers the SDK's next call with a recorded response.
	var replayMu sync.Mutex
	var replayed *httptest.ResponseRecorder
	replay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		replayMu.Lock()
		rec := replayed
		replayMu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	defer replay.Close()
	replayCfg := cfg.Copy()
	replayCfg.BaseEndpoint = aws.String(replay.URL)
	replayCfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	// A connection per call: without retries, a kept-alive connection the server side has
	// already let go of would fail a call for a reason that is not the response's.
	// OwnBodies as the provider's clients have it: without it, smithy-go's early close of the
	// request body cut connections under the response being read (seed#4, instrumented and slow).
	replayCfg.HTTPClient = sdkhttp.OwnBodies{Next: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	replayClient := ec2.NewFromConfig(replayCfg)

	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		values, _ := url.ParseQuery(body)
		action := values.Get("Action")
		if rec.Code == http.StatusOK {
			var root struct {
				XMLName   xml.Name
				RequestID string `xml:"requestId"`
			}
			if err := xml.Unmarshal(rec.Body.Bytes(), &root); err != nil || root.XMLName.Local != action+"Response" || root.RequestID == "" {
				t.Fatalf("%s: 200 with a body that is not %sResponse with a request ID (%v):\n%s", action, action, err, rec.Body)
			}
		} else {
			var ec2Err struct {
				Code    string `xml:"Errors>Error>Code"`
				Message string `xml:"Errors>Error>Message"`
			}
			if err := xml.Unmarshal(rec.Body.Bytes(), &ec2Err); err != nil || ec2Err.Code == "" || ec2Err.Message == "" {
				t.Fatalf("%s: status %d with a body that is not an EC2 error (%v):\n%s", action, rec.Code, err, rec.Body)
			}
			if ec2Err.Code == "InternalError" || rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
				t.Fatalf("%s: the emulator failed inside (%d %s: %s) instead of naming what is wrong with the request", action, rec.Code, ec2Err.Code, ec2Err.Message)
			}
		}
		call, ok := ec2Calls[action]
		if !ok || values.Get("Version") != "2016-11-15" {
			return
		}
		replayMu.Lock()
		replayed = rec
		replayMu.Unlock()
		err := call(context.Background(), replayClient)
		// A loopback connection dropped under load says nothing about the response: try again.
		var netErr *net.OpError
		for i := 0; i < 3 && errors.As(err, &netErr); i++ {
			err = call(context.Background(), replayClient)
		}
		if rec.Code == http.StatusOK && err != nil {
			t.Fatalf("%s: the SDK cannot decode the emulator's answer: %v\n%s", action, err, rec.Body)
		}
		if rec.Code != http.StatusOK && errorCode(err) == "" {
			t.Fatalf("%s: the SDK reads no error code from the emulator's error: %v\n%s", action, err, rec.Body)
		}
	})
}

func sortedActions() []string {
	out := make([]string, 0, len(ec2Calls))
	for a := range ec2Calls {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}
