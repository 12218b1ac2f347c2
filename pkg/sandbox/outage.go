package sandbox

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"

	"k8s.io/client-go/rest"
)

// OutageProxy stands between the API server and the cluster's clients (Tailor's schedulers,
// the workload controllers, kwok) so a test can make the API server stop answering them, as an
// API server that crashed or was cut off does: while it is out, the connections open are cut and
// new ones are closed as soon as they are accepted. It forwards bytes, not requests, so TLS and
// watches pass through it untouched.
type OutageProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	out   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startOutageProxy listens on a free loopback port and forwards to the API server of cfg; it
// returns the proxy and a copy of cfg that reaches the API server through it.
func startOutageProxy(cfg *rest.Config) (*OutageProxy, *rest.Config, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, nil, fmt.Errorf("the API server's address %q: %w", cfg.Host, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	p := &OutageProxy{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	through := rest.CopyConfig(cfg)
	through.Host = u.Scheme + "://" + ln.Addr().String()
	// The serving certificate names 127.0.0.1, which the proxy's address is too; a host name
	// the certificate was issued for stays the one verified.
	if through.ServerName == "" && u.Hostname() != "127.0.0.1" {
		through.ServerName = u.Hostname()
	}
	return p, through, nil
}

// Begin starts an outage: every open connection is cut, and new ones are refused until End.
func (p *OutageProxy) Begin() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out = true
	for c := range p.conns {
		_ = c.Close() // cutting it is the point
	}
}

// End ends the outage: new connections reach the API server again.
func (p *OutageProxy) End() {
	p.mu.Lock()
	p.out = false
	p.mu.Unlock()
}

// Close stops the proxy and cuts every connection.
func (p *OutageProxy) Close() {
	_ = p.ln.Close() // Accept returns, and serve with it
	p.Begin()
	p.wg.Wait()
}

func (p *OutageProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		out := p.out
		if !out {
			p.conns[c] = struct{}{}
		}
		p.mu.Unlock()
		if out {
			_ = c.Close() // refused: the API server does not answer
			continue
		}
		p.wg.Go(func() { p.forward(c) })
	}
}

// forward copies bytes both ways until either side closes or an outage cuts the connection.
func (p *OutageProxy) forward(c net.Conn) {
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		_ = c.Close()
	}()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.out {
		p.mu.Unlock()
		_ = up.Close()
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, up)
		p.mu.Unlock()
		_ = up.Close()
	}()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	// One side ended: closing both (the defers) ends the other copy.
	_ = c.Close()
	_ = up.Close()
	<-done
}
