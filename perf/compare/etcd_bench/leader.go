package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

const (
	leaderPollInterval = 10 * time.Millisecond
	// One Status call; a member that does not answer within it is skipped for this poll.
	statusTimeout = 250 * time.Millisecond
	// No member named a leader for this long: the cluster is lost (no quorum, or unreachable).
	clusterLostAfter = 10 * time.Second
	// The addresses of the topology's nodes: 10.77.0.(k+1) is node k (perf/compare/topology.py).
	topologyNet = "10.77.0."
)

type event struct {
	atNs   int64
	kind   string
	detail string
}

// leaderPoller asks the members who leads every leaderPollInterval and notes each change as an
// event. It asks the endpoints in their order (the client's own member first) and takes the first
// answer that names a leader. Its own gRPC connection per endpoint, without the client's retries:
// Maintenance.Status of clientv3 dials a new connection per call.
type leaderPoller struct {
	cli       *clientv3.Client
	endpoints []string
	conns     []*grpc.ClientConn
	status    []pb.MaintenanceClient

	nodeOfMember   map[uint64]string // member ID -> node number (text)
	leader         uint64            // the last leader noted, 0 = none yet
	events         []event
	lastLeaderAtNs atomic.Int64 // when a member last named a leader
}

func newLeaderPoller(cli *clientv3.Client, endpoints []string) (*leaderPoller, error) {
	p := &leaderPoller{cli: cli, endpoints: endpoints, nodeOfMember: make(map[uint64]string)}
	for _, ep := range endpoints {
		conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			p.close()
			return nil, fmt.Errorf("connecting to %s: %w", ep, err)
		}
		p.conns = append(p.conns, conn)
		p.status = append(p.status, pb.NewMaintenanceClient(conn))
	}
	p.lastLeaderAtNs.Store(time.Now().UnixNano())
	return p, nil
}

func (p *leaderPoller) close() {
	for _, c := range p.conns {
		c.Close()
	}
}

// learnMembers maps every member's ID to its node: by its name m<k> (sys_etcd.py names them so),
// or else by its peer URL's address in the topology.
func (p *leaderPoller) learnMembers(ctx context.Context) error {
	resp, err := p.cli.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("listing the members: %w", err)
	}
	for _, m := range resp.Members {
		p.nodeOfMember[m.ID] = nodeOfMember(m)
	}
	return nil
}

func nodeOfMember(m *pb.Member) string {
	if digits, found := strings.CutPrefix(m.Name, "m"); found {
		if k, err := strconv.ParseUint(digits, 10, 31); err == nil {
			return strconv.FormatUint(k, 10)
		}
	}
	for _, peer := range m.PeerURLs {
		u, err := url.Parse(peer)
		if err != nil {
			continue
		}
		host, _, err := net.SplitHostPort(u.Host)
		if err != nil {
			host = u.Host
		}
		if octet, found := strings.CutPrefix(host, topologyNet); found {
			if last, err := strconv.Atoi(octet); err == nil && last >= 1 {
				return strconv.Itoa(last - 1)
			}
		}
	}
	return fmt.Sprintf("%x", m.ID) // not a node of the topology: its ID
}

// poll asks once; true if some member named a leader.
func (p *leaderPoller) poll(ctx context.Context) bool {
	for _, status := range p.status {
		callCtx, cancel := context.WithTimeout(ctx, statusTimeout)
		resp, err := status.Status(callCtx, &pb.StatusRequest{})
		cancel()
		if err != nil || resp.Leader == 0 {
			continue // no answer, or an election under way at that member: ask the next
		}
		nowNs := time.Now().UnixNano()
		p.lastLeaderAtNs.Store(nowNs)
		if resp.Leader != p.leader {
			p.leader = resp.Leader
			if _, known := p.nodeOfMember[resp.Leader]; !known {
				_ = p.learnMembers(ctx) // a member added since the start; its ID if that fails
			}
			detail, known := p.nodeOfMember[resp.Leader]
			if !known {
				detail = fmt.Sprintf("%x", resp.Leader)
			}
			p.events = append(p.events, event{atNs: nowNs, kind: "leader", detail: detail})
		}
		return true
	}
	return false
}

// first polls until a member names a leader: the events' first row, the state at the start.
func (p *leaderPoller) first(ctx context.Context) error {
	ticker := time.NewTicker(leaderPollInterval)
	defer ticker.Stop()
	for !p.poll(ctx) {
		select {
		case <-ticker.C:
		case <-ctx.Done():
			return fmt.Errorf("no member named a leader: %w", ctx.Err())
		}
	}
	return nil
}

// run polls until ctx ends.
func (p *leaderPoller) run(ctx context.Context) {
	ticker := time.NewTicker(leaderPollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			p.poll(ctx)
		case <-ctx.Done():
			return
		}
	}
}

// lostForNs: how long no member has named a leader.
func (p *leaderPoller) lostForNs() int64 {
	return time.Now().UnixNano() - p.lastLeaderAtNs.Load()
}
