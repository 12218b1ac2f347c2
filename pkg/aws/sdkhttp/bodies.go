// Package sdkhttp holds what Tailor adds to the AWS SDK's HTTP client, shared by the provider and
// by tests that build SDK clients of their own against the emulator.
package sdkhttp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// OwnBodies gives net/http a request body of its own. smithy-go closes the body it handed to
// Do as soon as Do returns, which is when the response's headers arrive. net/http may still be
// in its request writer then: after copying Content-Length bytes it reads once more to check
// that nothing is left, and a closed smithy body answers that read with io.EOF. The writer
// takes the EOF for a failed write and closes the connection under the response body being
// read, and the call fails with "use of closed network connection" (aws/aws-sdk-go-v2#2737).
// Under load every retry can hit the same window. Every body Tailor sends (EC2, SSM, IAM,
// Pricing queries, SQS JSON) is small, so a copy costs nothing next to the round trip.
type OwnBodies struct{ Next aws.HTTPClient }

// Do sends a copy of the request's body.
func (c OwnBodies) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the request body to send: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	return c.Next.Do(req)
}
