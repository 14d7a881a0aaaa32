package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"time"
)

// Limits of the options, each with its reason.
const (
	// etcd refuses a request above --max-request-bytes (1.5 MiB by default); a message stays
	// well under it with its key.
	sizeBytesMax = 1 << 20
	// A window larger than this only queues in etcd's gRPC server.
	inflightMax = 1 << 16
	// The contract's rates are thousands per second; a million keeps the pacing arithmetic exact.
	rateMax = 1e6
)

// options are the contract's common options (perf/compare/README.md "The client contract")
// and the two that reach etcd.
type options struct {
	node        uint32
	rate        float64 // messages per second; 0 = as fast as the window allows
	sizeBytes   int
	startAtNs   int64 // CLOCK_REALTIME
	duration    time.Duration
	drain       time.Duration // the quiet time (no delivery) that ends the drain
	drainMax    time.Duration // the drain's end at the latest, after the last send
	recordsPath string
	summaryPath string
	eventsPath  string // "" = no events file
	inflight    int
	endpoints   []string // host:port, the client's own member first
	prefix      string
}

// parseOptions parses the command line; an error is the message to print before exiting 2.
func parseOptions(args []string, usage io.Writer) (options, error) {
	fs := flag.NewFlagSet("etcd_bench", flag.ContinueOnError)
	fs.SetOutput(usage)
	node := fs.Int("node", -1, "this client's node number K")
	rate := fs.Float64("rate", -1, "messages per second (0 = saturate with --inflight outstanding)")
	size := fs.Int("size", 0, "message size in bytes (at least 24)")
	startAt := fs.Int64("start-at", 0, "CLOCK_REALTIME ns of the first send")
	duration := fs.Float64("duration", 0, "seconds of sending")
	drain := fs.Float64("drain", 0, "after sending, receive until this many seconds pass without a delivery")
	drainMax := fs.Float64("drain-max", -1, "seconds after the last send at which the drain ends at the latest (default: --drain)")
	records := fs.String("records", "", "records CSV to write")
	summary := fs.String("summary", "", "summary JSON to write")
	events := fs.String("events", "", "events CSV to write (optional)")
	inflight := fs.Int("inflight", 256, "most messages sent and not yet delivered back")
	endpoints := fs.String("endpoints", "", "etcd client endpoints host:port,... (own member first)")
	prefix := fs.String("prefix", "/bench/", "key prefix of the messages")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() != 0 {
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}

	var errs []error
	check := func(ok bool, format string, a ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	check(*node >= 0 && *node <= math.MaxInt32, "--node K is required (K >= 0)")
	check(*rate >= 0 && *rate <= rateMax, "--rate R is required (0 <= R <= %g)", rateMax)
	check(*size >= messageHeaderBytes && *size <= sizeBytesMax,
		"--size B is required (%d <= B <= %d)", messageHeaderBytes, sizeBytesMax)
	check(*startAt > 0, "--start-at NS is required (CLOCK_REALTIME ns)")
	check(*duration > 0 && *duration <= 86400, "--duration S is required (0 < S <= 86400)")
	check(*drain >= 0 && *drain <= 86400, "--drain S must be within 0..86400")
	if *drainMax < 0 {
		*drainMax = *drain
	}
	check(*drainMax >= *drain && *drainMax <= 86400, "--drain-max S must be within --drain..86400")
	check(*records != "", "--records FILE is required")
	check(*summary != "", "--summary FILE is required")
	check(*inflight >= 1 && *inflight <= inflightMax, "--inflight N must be within 1..%d", inflightMax)
	check(*prefix != "", "--prefix must not be empty")
	var eps []string
	for _, ep := range strings.Split(*endpoints, ",") {
		if ep = strings.TrimSpace(ep); ep == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(ep); err != nil {
			errs = append(errs, fmt.Errorf("--endpoints: %q is not host:port", ep))
		}
		eps = append(eps, ep)
	}
	check(len(eps) > 0, "--endpoints host:port,... is required")
	if len(errs) > 0 {
		return options{}, errors.Join(errs...)
	}
	return options{
		node:        uint32(*node),
		rate:        *rate,
		sizeBytes:   *size,
		startAtNs:   *startAt,
		duration:    time.Duration(*duration * float64(time.Second)),
		drain:       time.Duration(*drain * float64(time.Second)),
		drainMax:    time.Duration(*drainMax * float64(time.Second)),
		recordsPath: *records,
		summaryPath: *summary,
		eventsPath:  *events,
		inflight:    *inflight,
		endpoints:   eps,
		prefix:      *prefix,
	}, nil
}
