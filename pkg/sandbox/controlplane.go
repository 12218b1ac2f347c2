// Package sandbox runs a whole cluster in one process, from Go modules alone: embedded etcd, an
// in-process kube-apiserver, the kube-controller-manager controllers a user's workloads and
// clean-up rely on (Controllers lists them), kwok playing every kubelet, and Tailor's scheduler
// over a cloud. The e2e tests and `tailor sandbox` both use it; docs/sandbox.md describes it.
package sandbox

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"k8s.io/kubernetes/test/utils/ktesting"
)

// ControlPlane is etcd and kube-apiserver running in this process.
type ControlPlane struct {
	// Config reaches the API server as a cluster administrator.
	Config *rest.Config
	stop   []func()
}

// StartControlPlane starts etcd in dir and kube-apiserver on a free loopback port. tb receives
// the API server's logs and cleanups; outside tests use NewProcessTB. apiserverFlags are added
// to kube-apiserver's, e.g. --authorization-mode=RBAC where a test needs RBAC enforced (the
// default, AlwaysAllow, lets every request through).
func StartControlPlane(tb ktesting.TB, dir string, apiserverFlags ...string) (*ControlPlane, error) {
	cp := &ControlPlane{}
	etcdURL, stopEtcd, err := startEtcd(dir)
	if err != nil {
		return nil, err
	}
	cp.stop = append(cp.stop, stopEtcd)
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{etcdURL}
	flags := append([]string{
		// No controller manager removes the not-ready taint that TaintNodesByCondition adds, and
		// no token controller creates the default ServiceAccount that ServiceAccount wants.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--endpoint-reconciler-type=none",
	}, apiserverFlags...)
	server, err := kubeapiservertesting.StartTestServer(tb, kubeapiservertesting.NewDefaultTestServerOptions(), flags, storage)
	if err != nil {
		cp.Stop()
		return nil, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	cp.stop = append(cp.stop, server.TearDownFn)
	cp.Config = rest.CopyConfig(server.ClientConfig)
	// The sandbox creates objects in bursts; the default client limits would throttle it.
	cp.Config.QPS, cp.Config.Burst = 500, 1000
	return cp, nil
}

// Stop stops the API server, then etcd.
func (cp *ControlPlane) Stop() {
	for i := len(cp.stop) - 1; i >= 0; i-- {
		cp.stop[i]()
	}
	cp.stop = nil
}

// startEtcd starts etcd on two free ports. A port found free may be taken before etcd binds it
// (by another sandbox's process, or by any process's outgoing connections, which draw from the
// same range), so a bind that fails for that is tried again on other ports.
func startEtcd(dir string) (string, func(), error) {
	var err error
	for range 5 {
		var endpoint string
		var stop func()
		// etcd does not always wrap the listener's error: its text is what is sure to be there.
		if endpoint, stop, err = startEtcdOnce(dir); err == nil || !strings.Contains(err.Error(), syscall.EADDRINUSE.Error()) {
			return endpoint, stop, err
		}
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			return "", nil, rmErr
		}
	}
	return "", nil, err
}

func startEtcdOnce(dir string) (string, func(), error) {
	clientPort, err := freePort()
	if err != nil {
		return "", nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return "", nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	// etcd's own log goes beside its data: it is noisy at shutdown and says nothing users need.
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{filepath.Join(dir, "etcd.log")}
	// A sandbox's data lives as long as its process: nothing is lost to a missing fsync but what
	// an operating system crash would take, and the cluster is thrown away then anyway. With
	// fsync, every write the API server answers waits for the disk, which on a machine shared
	// with builds and other sandboxes is what the whole sandbox waits for.
	cfg.UnsafeNoFsync = true
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("starting etcd in %s: %w", dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		e.Close()
		return "", nil, fmt.Errorf("etcd in %s was not ready within a minute", dir)
	}
	return clientURL.String(), e.Close, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }() // only the port number was wanted
	return l.Addr().(*net.TCPAddr).Port, nil
}
