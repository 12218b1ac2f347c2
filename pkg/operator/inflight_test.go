package operator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A request holds its slot until its body is closed; one waiting for a slot gives up when its
// context ends, and takes none.
func TestLimitInFlightHoldsASlotUntilTheBodyCloses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	client := &http.Client{Transport: limitInFlight(1)(srv.Client().Transport)}
	get := func(ctx context.Context) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		return client.Do(req)
	}

	first, err := get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second request while the first's body is open: got %v, want it to wait until its context ends", err)
	}
	if err := first.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Body.Close(); err != nil { // a second Close gives back nothing more
		t.Fatal(err)
	}
	second, err := get(context.Background())
	if err != nil {
		t.Fatalf("once the first body closed: %v", err)
	}
	defer second.Body.Close()
	if body, _ := io.ReadAll(second.Body); string(body) != "ok" {
		t.Errorf("body %q, want ok", body)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with the second's body open: got %v, want the slot still taken after the first's two Closes", err)
	}
}

// failing is a transport whose every request fails before a response.
type failing struct{}

func (failing) RoundTrip(*http.Request) (*http.Response, error) { return nil, errors.New("refused") }

// A request that fails gives its slot back at once.
func TestLimitInFlightFreesTheSlotOfAFailedRequest(t *testing.T) {
	client := &http.Client{Transport: limitInFlight(1)(failing{})}
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := client.Do(mustRequest(t, ctx))
		cancel()
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("request %d: got %v, want the transport's error at once", i, err)
		}
	}
}

func mustRequest(t *testing.T, ctx context.Context) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://example.invalid/", nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
