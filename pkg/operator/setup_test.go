package operator

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
)

// eventServer answers as much of the API as an events broadcaster uses, slowly, over HTTP/2
// with the API server's default of 100 streams a connection, and counts the connections it
// accepted, the Events written and the most writes it had open at once.
type eventServer struct {
	*httptest.Server
	connections, written, open, mostOpen atomic.Int64
}

func startEventServer(t *testing.T) *eventServer {
	s := &eventServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
				TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: "events.k8s.io/v1",
				APIResources: []metav1.APIResource{{Name: "events", Namespaced: true, Kind: "Event", Verbs: []string{"create", "patch"}}},
			})
			return
		}
		open := s.open.Add(1)
		defer s.open.Add(-1)
		for most := s.mostOpen.Load(); open > most && !s.mostOpen.CompareAndSwap(most, open); most = s.mostOpen.Load() {
		}
		time.Sleep(20 * time.Millisecond) // a busy API server: writes pile up behind each other
		body, _ := io.ReadAll(r.Body)
		s.written.Add(1)
		w.Header().Set("Content-Type", r.Header.Get("Content-Type")) // the Event back, as it came
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}))
	s.EnableHTTP2 = true
	s.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 100}
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.connections.Add(1)
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *eventServer) config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	// No client-side limit: the scheduler's runs at hundreds of requests a second.
	return &rest.Config{Host: s.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, QPS: -1}
}

// A burst of Events, as the scheduler records for a burst of pods it cannot place, goes out over
// the one connection: with every Event in flight at once, the client would dial a connection of
// its own for each request beyond the server's 100 streams.
func TestTheSchedulersEventsShareOneConnection(t *testing.T) {
	const burst = 400
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startEventServer(t)
	client, err := kubernetes.NewForConfig(s.config())
	if err != nil {
		t.Fatal(err)
	}
	broadcaster, err := capEventWrites(ctx, s.config(), events.NewEventBroadcasterAdapterWithContext(ctx, client))
	if err != nil {
		t.Fatal(err)
	}
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder("tailor")
	for i := range burst {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "default", UID: "uid"}}
		recorder.Eventf(pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/0 nodes are available")
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return s.written.Load() == burst, nil
	})
	if err != nil {
		t.Fatalf("%d of %d Events written", s.written.Load(), burst)
	}
	if got := s.mostOpen.Load(); got > eventWritesInFlight {
		t.Errorf("%d Event writes were open at once, want at most %d", got, eventWritesInFlight)
	}
	if got := s.connections.Load(); got != 1 {
		t.Errorf("the Events went over %d connections, want 1", got)
	}
}
