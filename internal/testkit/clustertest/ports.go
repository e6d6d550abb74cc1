package clustertest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
)

// The cluster's ports: the defaults, free ones for a test, and the check that
// none is in use.

// Ports are the server's ports on 127.0.0.1.
type Ports struct {
	Frontend, HTTP               int // the frontend's gRPC and HTTP ports: clients use these
	FrontendMembership           int
	History, HistoryMembership   int
	Matching, MatchingMembership int
	Worker, WorkerMembership     int
}

// DefaultPorts are the server's own defaults, as in docker-compose.yml:
// the frontend on 7233.
func DefaultPorts() Ports {
	return Ports{Frontend: 7233, HTTP: 7243, FrontendMembership: 6933, History: 7234, HistoryMembership: 6934,
		Matching: 7235, MatchingMembership: 6935, Worker: 7239, WorkerMembership: 6939}
}

func (p Ports) list() []struct {
	name string
	port int
} {
	return []struct {
		name string
		port int
	}{
		{"the frontend", p.Frontend}, {"the frontend's HTTP API", p.HTTP}, {"the frontend's membership", p.FrontendMembership},
		{"history", p.History}, {"history's membership", p.HistoryMembership},
		{"matching", p.Matching}, {"matching's membership", p.MatchingMembership},
		{"the worker service", p.Worker}, {"the worker service's membership", p.WorkerMembership},
	}
}

func (p Ports) env() []string {
	return []string{
		"FRONTEND_GRPC_PORT=" + strconv.Itoa(p.Frontend), "FRONTEND_HTTP_PORT=" + strconv.Itoa(p.HTTP),
		"FRONTEND_MEMBERSHIP_PORT=" + strconv.Itoa(p.FrontendMembership),
		"HISTORY_GRPC_PORT=" + strconv.Itoa(p.History), "HISTORY_MEMBERSHIP_PORT=" + strconv.Itoa(p.HistoryMembership),
		"MATCHING_GRPC_PORT=" + strconv.Itoa(p.Matching), "MATCHING_MEMBERSHIP_PORT=" + strconv.Itoa(p.MatchingMembership),
		"WORKER_GRPC_PORT=" + strconv.Itoa(p.Worker), "WORKER_MEMBERSHIP_PORT=" + strconv.Itoa(p.WorkerMembership),
	}
}

// freePorts returns ports on 127.0.0.1 that were free a moment ago, all
// different, between 20000 and 32767: the server keeps its membership
// ports in a smallint column (a port from the kernel's ephemeral range,
// above 32767, stops it at start: "value ... is out of range for type
// smallint"), and the range stays clear of the kernel's ephemeral ports.
func freePorts() (Ports, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	next := func() int {
		for range 200 {
			port := 20000 + rand.IntN(12000)
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err == nil {
				ls = append(ls, l)
				return port
			}
		}
		return 0
	}
	p := Ports{next(), next(), next(), next(), next(), next(), next(), next(), next()}
	for _, e := range p.list() {
		if e.port == 0 {
			return p, errors.New("no free port on 127.0.0.1 between 20000 and 32000")
		}
	}
	return p, nil
}

// checkPorts returns an error naming the first port of the cluster (or its
// Web UI) that is in use.
func (c *Cluster) checkPorts() error {
	ps := c.ports.list()
	if c.opts.UIPort != 0 {
		ps = append(ps, struct {
			name string
			port int
		}{"the Web UI", c.opts.UIPort})
	}
	for _, p := range ps {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)))
		if err != nil {
			return fmt.Errorf("port %d (%s) is in use on 127.0.0.1: stop what listens there (make stop stops make demo's dev server)", p.port, p.name)
		}
		l.Close()
	}
	return nil
}
