package sandbox

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/controller/replicaset"
)

// Throughput is how fast the sandbox's own components, the workload controllers and kwok, may
// go: their client limits and how much each does at once. The defaults suit `make run` and the
// tests on a laptop; a benchmark of thousands of pods asks for FleetThroughput, so that the time
// it measures is Tailor's and not the sandbox's making and running the pods.
type Throughput struct {
	// QPS and Burst, when QPS is set, give the controllers and kwok each a client of their own
	// with these limits. Unset, they share the cluster's client (500 requests/s, bursts of 1,000)
	// with each other and with the test.
	QPS   float32
	Burst int
	// Workers is how many objects each workload controller syncs at once (2 if unset).
	Workers int
	// ReplicaBurst is how many pods one sync of a ReplicaSet creates or deletes at most, in
	// batches that double from one (kube-controller-manager's 500 if unset). After each sync the
	// controller waits to see every pod it created, so a small burst is many round trips.
	ReplicaBurst int
	// KwokParallelism is how many node and pod stages kwok plays at once, each a status write
	// (4 if unset).
	KwokParallelism int
	// StreamsPerConnection is how many requests the API server lets a client have open at once
	// on one HTTP/2 connection (its own default, 100, if unset). A client past the limit dials a
	// new connection for each request that does not fit, so a ReplicaSet creating thousands of
	// pods at once opened thousands of connections, each a TLS handshake for both ends.
	StreamsPerConnection int
}

// FleetThroughput is for fleets of thousands of nodes in one process: client limits the API
// server is the bound of, not the client; a ReplicaSet that makes 5,000 pods in one sync; kwok
// four times as parallel; an API server that takes each client's requests on one connection.
func FleetThroughput() Throughput {
	return Throughput{QPS: 5000, Burst: 10000, Workers: 4, ReplicaBurst: 5000, KwokParallelism: 16, StreamsPerConnection: 10000}
}

// apiServerFlags are the API server's flags for t.
func (t Throughput) apiServerFlags() []string {
	if t.StreamsPerConnection <= 0 {
		return nil
	}
	return []string{fmt.Sprintf("--http2-max-streams-per-connection=%d", t.StreamsPerConnection)}
}

func (t Throughput) workers() int {
	if t.Workers > 0 {
		return t.Workers
	}
	return 2
}

func (t Throughput) replicaBurst() int {
	if t.ReplicaBurst > 0 {
		return t.ReplicaBurst
	}
	return replicaset.BurstReplicas
}

func (t Throughput) kwokParallelism() uint {
	if t.KwokParallelism > 0 {
		return uint(t.KwokParallelism)
	}
	return 4
}

// clients returns the config and client the controllers use and the client kwok uses: shared
// (cfg and kube) unless t sets QPS, then each a new client through cfg with t's limits.
func (t Throughput) clients(cfg *rest.Config, kube kubernetes.Interface) (*rest.Config, kubernetes.Interface, kubernetes.Interface, error) {
	if t.QPS <= 0 {
		return cfg, kube, kube, nil
	}
	limited := rest.CopyConfig(cfg)
	limited.QPS, limited.Burst = t.QPS, max(t.Burst, int(t.QPS))
	controllers, err := kubernetes.NewForConfig(limited)
	if err != nil {
		return nil, nil, nil, err
	}
	kwok, err := kubernetes.NewForConfig(limited)
	if err != nil {
		return nil, nil, nil, err
	}
	return limited, controllers, kwok, nil
}
