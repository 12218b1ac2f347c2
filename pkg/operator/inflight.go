package operator

import (
	"io"
	"net/http"
	"sync"

	"k8s.io/client-go/transport"
)

// limitInFlight wraps a client's transport so that at most n of its requests are open at once:
// from the request going out until its response body is closed, the span in which it holds an
// HTTP/2 stream. A request waits for a slot, or until its context ends.
func limitInFlight(n int) transport.WrapperFunc {
	slots := make(chan struct{}, n)
	return func(next http.RoundTripper) http.RoundTripper {
		return &inFlightLimit{next: next, slots: slots}
	}
}

type inFlightLimit struct {
	next  http.RoundTripper
	slots chan struct{}
}

func (l *inFlightLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case l.slots <- struct{}{}:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	resp, err := l.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		<-l.slots
		return resp, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: func() { <-l.slots }}
	return resp, nil
}

// WrappedRoundTripper lets client-go's transport helpers see through the wrapper.
func (l *inFlightLimit) WrappedRoundTripper() http.RoundTripper { return l.next }

// releasingBody gives the slot back when the body is closed, once.
type releasingBody struct {
	io.ReadCloser
	release func()
	once    sync.Once
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
