package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// certificates is where the serving certificate comes from: a folder or a Secret.
type certificates interface {
	Run(ctx context.Context)
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// Server is the webhook's HTTPS server.
type Server struct {
	opts     Options
	mutator  Mutator
	certs    certificates
	listener net.Listener
}

// NewServer checks the options, reads the certificate folder if there is one, and listens, so
// that every mistake shows before anything runs. kube is used only with CertSecret.
func NewServer(opts Options, schedulerName string, kube kubernetes.Interface, clk clock.WithTicker) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if !opts.Enabled() {
		return nil, fmt.Errorf("the webhook is disabled (--webhook-port=0)")
	}
	s := &Server{opts: opts, mutator: Mutator{SchedulerName: schedulerName}}
	if opts.CertDir != "" {
		certs, err := newDirCertificates(opts.CertDir)
		if err != nil {
			return nil, err
		}
		s.certs = certs
	} else {
		s.certs = newSecretCertificates(kube, clk, &opts)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(opts.BindAddress, strconv.Itoa(opts.Port)))
	if err != nil {
		return nil, fmt.Errorf("--webhook-port=%d: %w", opts.Port, err)
	}
	s.listener = l
	return s, nil
}

// Addr is where the server listens.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Run serves until ctx ends, then stops taking connections and lets requests in flight finish.
// The API server sees a webhook that does not answer as failurePolicy says: Ignore.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("webhook")
	ctx = klog.NewContext(ctx, logger)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.certs.Run(ctx)
	mux := http.NewServeMux()
	mux.Handle(Path, s.mutator)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certs.GetCertificate},
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdownCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer stop()
		_ = srv.Shutdown(shutdownCtx) // what is still open after 5 s is cut; the caller is leaving
	}()
	logger.Info("Serving the webhook", "address", s.listener.Addr().String(), "path", Path, "schedulerName", s.mutator.SchedulerName)
	err := srv.ServeTLS(s.listener, "", "")
	cancel()
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serving the webhook on %s: %w", s.listener.Addr(), err)
}
