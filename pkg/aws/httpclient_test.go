package aws

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/tailor-sh/tailor/pkg/aws/emulator"
	"github.com/tailor-sh/tailor/pkg/aws/sdkhttp"
)

// writeErrors is a transport that counts requests net/http failed to finish writing.
type writeErrors struct {
	next http.RoundTripper
	mu   sync.Mutex
	errs []error
}

func (w *writeErrors) RoundTrip(r *http.Request) (*http.Response, error) {
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err != nil {
			w.mu.Lock()
			w.errs = append(w.errs, i.Err)
			w.mu.Unlock()
		}
	}}
	return w.next.RoundTrip(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
}

// TestRequestBodiesOutliveTheSDKsClose: through the real SDK against the emulator, no request
// is cut short by smithy-go closing its body when the response headers arrive. Without
// sdkhttp.OwnBodies most of these writes end in io.EOF and the connection is closed under the response
// being read; under load that failed whole calls (CI, DescribeInstanceTypes).
func TestRequestBodiesOutliveTheSDKsClose(t *testing.T) {
	emu := emulator.Start(emulator.Options{ClusterName: "tailor"})
	t.Cleanup(emu.Close)
	// Retries on, as the provider's tests have them: with one attempt per call the cut writes
	// did not show in 20 calls; with three they showed in every run of five.
	cfg, err := SDKConfig(context.Background(), Options{Endpoint: emu.URL(), RetryMaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	traced := &writeErrors{next: http.DefaultTransport.(*http.Transport).Clone()}
	if _, ok := cfg.HTTPClient.(sdkhttp.OwnBodies); !ok {
		t.Fatalf("SDKConfig's HTTP client is %T, want sdkhttp.OwnBodies", cfg.HTTPClient)
	}
	cfg.HTTPClient = sdkhttp.OwnBodies{Next: &http.Client{Transport: traced}}
	client := ec2.NewFromConfig(cfg)
	for range 20 {
		if _, err := client.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100)}); err != nil {
			t.Fatal(err)
		}
	}
	if len(traced.errs) > 0 {
		t.Errorf("%d of 20 requests failed to finish writing, first: %v", len(traced.errs), traced.errs[0])
	}
}
