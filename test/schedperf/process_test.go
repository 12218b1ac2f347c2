package schedperf

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// buildSchedulers builds the two binaries compared: tailor-scheduler (cmd/scheduler) and
// kube-scheduler from the k8s.io/kubernetes module Tailor is built on. TAILOR_SCHEDULER_BIN and
// KUBE_SCHEDULER_BIN name binaries built already.
func buildSchedulers(b *testing.B) (tailorBin, kubeBin string) {
	b.Helper()
	dir := b.TempDir()
	build := func(env, pkg, name string) string {
		if path := os.Getenv(env); path != "" {
			return path
		}
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = "../.."
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", pkg, err, msg)
		}
		return out
	}
	return build("TAILOR_SCHEDULER_BIN", "./cmd/scheduler", "tailor-scheduler"),
		build("KUBE_SCHEDULER_BIN", "k8s.io/kubernetes/cmd/kube-scheduler", "kube-scheduler")
}

// child is a scheduler running as a process of its own, serving HTTPS on a loopback port.
type child struct {
	s    scheduler
	cmd  *exec.Cmd
	port int
}

// startChild runs bin with s's configuration against c. It serves /metrics and the heap profile
// to anyone (the benchmark reads them); every other path asks the API server, which allows all.
func startChild(ctx context.Context, b *testing.B, c *cluster, s scheduler, bin string) *child {
	b.Helper()
	config, err := s.writeConfig(c.dir, c.kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		b.Fatal(err)
	}
	args := []string{"--config=" + config, "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--authentication-kubeconfig=" + c.kubeconfig, "--authorization-kubeconfig=" + c.kubeconfig,
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/heap"}
	if s.tailor {
		// The webhook needs a certificate and is no part of the scheduler: off in both.
		args = append(args, "--cloud=fake", "--webhook-port=0")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	logs, err := os.Create(filepath.Join(c.dir, s.name+".log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	// A benchmark stopped by its timeout or a signal runs no cleanup: the child must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting %s: %v", bin, err)
	}
	ch := &child{s: s, cmd: cmd, port: port}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logs.Close()
	})
	return ch
}

// waitHealthy waits until the child answers /healthz.
func (ch *child) waitHealthy(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if ch.cmd.ProcessState != nil {
			return false, fmt.Errorf("%s exited: %v", ch.s.name, ch.cmd.ProcessState)
		}
		_, err := ch.get(ctx, "/healthz")
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s scheduler (pid %d) not healthy: %w; its log is %s.log", ch.s.name, ch.cmd.Process.Pid, err, ch.s.name)
	}
	return nil
}

// get fetches path from the child. Its serving certificate is self-signed: not verified.
func (ch *child) get(ctx context.Context, path string) ([]byte, error) {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 30 * time.Second} // #nosec G402 -- a loopback child of this benchmark
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", ch.port, path), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return body, nil
}

// memory is what /proc/PID/status says of a process's resident memory, in bytes.
type memory struct {
	// rss is VmRSS, resident now; hwm is VmHWM, the most it has been resident.
	rss, hwm uint64
}

// readMemory reads /proc/pid/status.
func readMemory(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	defer func() { _ = f.Close() }()
	return parseStatus(f)
}

// parseStatus reads VmRSS and VmHWM (in kB) from the text of /proc/PID/status.
func parseStatus(r io.Reader) (memory, error) {
	var m memory
	found := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return memory{}, fmt.Errorf("/proc status field %s: want a number of kB, got %q", key, value)
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc status field %s: %w", key, err)
		}
		if key == "VmRSS" {
			m.rss = kb * 1024
		} else {
			m.hwm = kb * 1024
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return memory{}, err
	}
	if found != 2 {
		return memory{}, fmt.Errorf("/proc status: VmRSS or VmHWM missing")
	}
	return m, nil
}

// heapInuse reads go_memstats_heap_inuse_bytes from the child's /metrics.
func (ch *child) heapInuse(ctx context.Context) (float64, error) {
	return ch.metric(ctx, "go_memstats_heap_inuse_bytes")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
