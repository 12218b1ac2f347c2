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
