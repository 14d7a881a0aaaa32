/* cpg_bench: the corosync CPG benchmark client of perf/compare (README.md "The client contract").
 *
 *   cpg_bench --node K --rate R --size B --start-at NS --duration S --drain S [--drain-max S]
 *             --records FILE.csv --summary FILE.json [--events FILE.csv] [--inflight N]
 *             [--group NAME]
 *
 * It joins the CPG group NAME (default tob-compare) of the corosync that runs in its network
 * namespace (libqb's IPC uses abstract unix sockets, which belong to the namespace), and from
 * --start-at (CLOCK_REALTIME) multicasts with CPG_TYPE_AGREED (totem's total order) at R
 * messages per second for --duration, then only receives until --drain seconds pass without a
 * delivery and with none of its own messages outstanding, at most --drain-max seconds (default:
 * --drain) after the end of sending, then writes its files. Its own messages count because CPG
 * delivers every message corosync accepted to its sender: while some are missing the ring has a
 * backlog (it is re-forming after a kill, say, which takes token + consensus, 9.5 s by default).
 *
 * Message (little-endian):  offset 0 u32 node | 4 u32 magic 0x434d5042 "BPMC" | 8 u64 seq
 *                           | 16 u64 send_ns | 24.. zero padding up to --size.
 *
 * send_ns is read just before the cpg_mcast_joined call that corosync accepts; a send refused
 * with CS_ERR_TRY_AGAIN (CPG's flow control) counts as a retry and is tried again after a
 * dispatch, so time spent refused shows in `retries` and in the rate achieved, not in latency.
 * With R = 0 the client sends as fast as corosync accepts, with at most --inflight N (default
 * 256, 0 = no limit) of its messages not yet delivered back to it. CPG's flow control bounds
 * totem's send queue only, not the deliveries corosync holds for a client that reads slower than
 * the ring delivers (a queue per client without a bound, exec/ipc_glue.c's outq, flushed from
 * corosync's main loop at SCHED_RR): on 2 shared CPUs, 1 KiB messages without the window stalled
 * delivery for about 10 s (latency p99 10-17 s, a quarter of the throughput) instead of settling.
 *
 * Exit: 0 after a complete run (or SIGTERM/SIGINT), 1 when corosync failed or went away (the
 * files are written, the summary's "error" says why), 2 on bad arguments.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <corosync/corotypes.h>
#include <corosync/cpg.h>

enum {
	MSG_MAGIC = 0x434d5042u,         /* "BPMC" as little-endian bytes */
	MSG_HEADER_BYTES = 24,
	MSG_SIZE_MAX = 1 << 20,          /* CPG fragments big messages; 1 MiB is plenty here */
	BURST_MAX = 64,                  /* sends between two dispatches, so deliveries keep flowing */
	NODE_MAX = CPG_MEMBERS_MAX - 1,  /* node K has corosync nodeid K + 1 */
	CONNECT_TRIES = 500,             /* x 10 ms: how long corosync may refuse the join (busy) */
	INFLIGHT_DEFAULT = 256,          /* the contract's default window */
};

static const uint64_t NS_PER_S = 1000000000ull;
static const uint64_t WAIT_MAX_NS = 100000000ull;      /* wake at least every 100 ms */
static const uint64_t RETRY_WAIT_NS = 200000ull;       /* after CS_ERR_TRY_AGAIN */
static const size_t RECORDS_INITIAL = 1u << 16;

struct options {
	int node;
	double rate;                 /* messages per second, 0 = as fast as accepted */
	size_t size;
	uint64_t start_at_ns;
	double duration_s;
	double drain_s;              /* quiet time that ends the run ... */
	double drain_max_s;          /* ... or this long after the end of sending; < 0: drain_s */
	const char *records_path;
	const char *summary_path;
	const char *events_path;     /* NULL: no events file */
	const char *group;
	uint64_t inflight;           /* R = 0 only: own messages not yet delivered; 0 = no limit */
};

struct record {
	uint64_t seq;
	uint64_t send_ns;
	uint64_t recv_ns;
	uint32_t sender;
};

struct bench {
	struct options opt;
	cpg_handle_t handle;
	bool connected;
	int fd;
	struct cpg_name group;
	unsigned char *msg;
	struct record *records;
	size_t records_len;
	size_t records_cap;
	FILE *events;
	uint32_t leader_nodeid;      /* the ring representative, 0 = not known yet */
	uint64_t slot;               /* paced: the index of the next send instant */
	uint64_t sent;
	uint64_t send_errors;
	uint64_t retries;
	uint64_t own_delivered;
	uint64_t first_send_ns;
	uint64_t last_send_ns;
	uint64_t last_delivery_ns;   /* 0: nothing delivered yet */
	bool flow_blocked;           /* the last send was refused with CS_ERR_TRY_AGAIN */
	char error[256];             /* empty: no error */
};

static volatile sig_atomic_t stop_requested;

/* ---- small helpers ---------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void set_error(struct bench *b, const char *fmt, ...)
{
	if (b->error[0] != '\0')
		return; /* keep the first cause */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->error, sizeof b->error, fmt, ap);
	va_end(ap);
}

static const char *cs_name(cs_error_t e)
{
	switch (e) {
	case CS_OK: return "CS_OK";
	case CS_ERR_LIBRARY: return "CS_ERR_LIBRARY";
	case CS_ERR_TRY_AGAIN: return "CS_ERR_TRY_AGAIN";
	case CS_ERR_INVALID_PARAM: return "CS_ERR_INVALID_PARAM";
	case CS_ERR_NO_MEMORY: return "CS_ERR_NO_MEMORY";
	case CS_ERR_BAD_HANDLE: return "CS_ERR_BAD_HANDLE";
	case CS_ERR_ACCESS: return "CS_ERR_ACCESS";
	case CS_ERR_NOT_EXIST: return "CS_ERR_NOT_EXIST";
	case CS_ERR_EXIST: return "CS_ERR_EXIST";
	case CS_ERR_TOO_BIG: return "CS_ERR_TOO_BIG";
	case CS_ERR_NO_RESOURCES: return "CS_ERR_NO_RESOURCES";
	default: return "CS_ERR_(other)";
	}
}

/* The errors after which the IPC connection to corosync is gone for good. */
static bool connection_lost(cs_error_t e)
{
	return e == CS_ERR_LIBRARY || e == CS_ERR_BAD_HANDLE;
}

/* ---- options ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: cpg_bench --node K --rate R --size B --start-at NS --duration S --drain S [--drain-max S]\n"
		   "                 --records FILE.csv --summary FILE.json [--events FILE.csv]\n"
		   "                 [--inflight N] [--group NAME]\n");
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
		return false;
	*out = v;
	return true;
}

static bool parse_seconds(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < 0)
		return false;
	*out = v;
	return true;
}

/* Checks and stores one option's value; false when it is bad. */
static bool parse_option(struct options *o, int c, const char *v)
{
	uint64_t u = 0;
	switch (c) {
	case 'n': if (!parse_u64(v, &u) || u > NODE_MAX) break; o->node = (int)u; return true;
	case 'r': if (!parse_seconds(v, &o->rate)) break; return true;
	case 'b': if (!parse_u64(v, &u) || u < MSG_HEADER_BYTES || u > MSG_SIZE_MAX) break;
		  o->size = (size_t)u; return true;
	case 's': if (!parse_u64(v, &o->start_at_ns) || o->start_at_ns == 0) break; return true;
	case 'd': if (!parse_seconds(v, &o->duration_s)) break; return true;
	case 'D': if (!parse_seconds(v, &o->drain_s)) break; return true;
	case 'M': if (!parse_seconds(v, &o->drain_max_s)) break; return true;
	case 'R': o->records_path = v; return true;
	case 'S': o->summary_path = v; return true;
	case 'e': o->events_path = v; return true;
	case 'i': if (!parse_u64(v, &o->inflight)) break; return true;
	case 'g': if (strlen(v) == 0 || strlen(v) > CPG_MAX_NAME_LENGTH) break; o->group = v; return true;
	default: break;
	}
	return false;
}

static bool parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{"node", required_argument, NULL, 'n'},     {"rate", required_argument, NULL, 'r'},
		{"size", required_argument, NULL, 'b'},     {"start-at", required_argument, NULL, 's'},
		{"duration", required_argument, NULL, 'd'}, {"drain", required_argument, NULL, 'D'},
		{"drain-max", required_argument, NULL, 'M'},
		{"records", required_argument, NULL, 'R'},  {"summary", required_argument, NULL, 'S'},
		{"events", required_argument, NULL, 'e'},   {"inflight", required_argument, NULL, 'i'},
		{"group", required_argument, NULL, 'g'},    {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	*o = (struct options){.node = -1, .rate = -1, .size = 0, .duration_s = -1, .drain_s = -1, .drain_max_s = -1,
			      .group = "tob-compare", .inflight = INFLIGHT_DEFAULT};
	int c;
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == '?')
			return false;
		if (!parse_option(o, c, optarg)) {
			const struct option *l = longs;
			while (l->name != NULL && l->val != c)
				l++;
			fprintf(stderr, "cpg_bench: bad value '%s' for --%s (node 0..%d, size %d..%d bytes, "
					"numbers non-negative, start-at > 0, group 1..%d chars)\n",
				optarg, l->name ? l->name : "?", NODE_MAX, MSG_HEADER_BYTES, MSG_SIZE_MAX,
				CPG_MAX_NAME_LENGTH);
			return false;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "cpg_bench: unexpected argument '%s'\n", argv[optind]);
		return false;
	}
	if (o->node < 0 || o->rate < 0 || o->size == 0 || o->start_at_ns == 0 || o->duration_s < 0 ||
	    o->drain_s < 0 || o->records_path == NULL || o->summary_path == NULL) {
		fprintf(stderr, "cpg_bench: --node, --rate, --size, --start-at, --duration, --drain, "
				"--records and --summary are required\n");
		return false;
	}
	if (o->drain_max_s < 0)
		o->drain_max_s = o->drain_s;
	return true;
}

/* ---- records and events ----------------------------------------------------------------- */

static bool records_reserve(struct bench *b, size_t cap)
{
	struct record *r = realloc(b->records, cap * sizeof *r);
	if (r == NULL)
		return false;
	b->records = r;
	b->records_cap = cap;
	return true;
}

static void record_append(struct bench *b, const struct record *r)
{
	if (b->records_len == b->records_cap && !records_reserve(b, b->records_cap * 2)) {
		set_error(b, "out of memory for %zu records", b->records_len);
		return;
	}
	b->records[b->records_len++] = *r;
}

static void event_write(struct bench *b, uint64_t at_ns, const char *kind, const char *detail)
{
	if (b->events == NULL)
		return;
	fprintf(b->events, "%" PRIu64 ",%s,%s\n", at_ns, kind, detail);
	fflush(b->events); /* rare, and worth having on disk if we die */
}

/* ---- callbacks -------------------------------------------------------------------------- */

static struct bench *bench_of(cpg_handle_t handle)
{
	void *ctx = NULL;
	cpg_context_get(handle, &ctx);
	return ctx;
}

static void on_deliver(cpg_handle_t handle, const struct cpg_name *group, uint32_t nodeid,
		       uint32_t pid, void *msg, size_t msg_len)
{
	uint64_t recv_ns = now_ns();
	struct bench *b = bench_of(handle);
	(void)nodeid;
	(void)pid;
	if (group->length != b->group.length || memcmp(group->value, b->group.value, group->length) != 0)
		return;
	if (msg_len < MSG_HEADER_BYTES)
		return;
	const unsigned char *m = msg;
	uint32_t sender, magic;
	uint64_t seq, send_ns;
	memcpy(&sender, m, 4);
	memcpy(&magic, m + 4, 4);
	memcpy(&seq, m + 8, 8);
	memcpy(&send_ns, m + 16, 8);
	if (le32toh(magic) != MSG_MAGIC)
		return;
	struct record r = {.sender = le32toh(sender), .seq = le64toh(seq), .send_ns = le64toh(send_ns),
			   .recv_ns = recv_ns};
	record_append(b, &r);
	b->last_delivery_ns = recv_ns;
	if (r.sender == (uint32_t)b->opt.node)
		b->own_delivered++;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* "0 1 3": the node numbers (nodeid - 1) of the group's members, each once, ascending. */
static void format_members(const struct cpg_address *list, size_t n, char *out, size_t out_len)
{
	uint32_t nodes[CPG_MEMBERS_MAX];
	size_t count = 0;
	for (size_t i = 0; i < n && i < CPG_MEMBERS_MAX; i++)
		nodes[count++] = list[i].nodeid - 1;
	qsort(nodes, count, sizeof nodes[0], cmp_u32);
	size_t used = 0;
	out[0] = '\0';
	for (size_t i = 0; i < count; i++) {
		if (i > 0 && nodes[i] == nodes[i - 1])
			continue; /* two processes of one node */
		int w = snprintf(out + used, out_len - used, used ? " %u" : "%u", nodes[i]);
		if (w < 0 || (size_t)w >= out_len - used)
			return; /* cannot happen with the buffer on_confchg gives */
		used += (size_t)w;
	}
}

static void on_confchg(cpg_handle_t handle, const struct cpg_name *group,
		       const struct cpg_address *members, size_t members_len,
		       const struct cpg_address *left, size_t left_len,
		       const struct cpg_address *joined, size_t joined_len)
{
	uint64_t at_ns = now_ns();
	struct bench *b = bench_of(handle);
	char detail[CPG_MEMBERS_MAX * 11 + 1]; /* up to 10 digits and a space each */
	(void)group;
	(void)left;
	(void)left_len;
	(void)joined;
	(void)joined_len;
	format_members(members, members_len, detail, sizeof detail);
	event_write(b, at_ns, "members", detail);
}

/* Totem's ring id names the ring's representative, the node that formed the ring. */
static void on_totem_confchg(cpg_handle_t handle, struct cpg_ring_id ring_id, uint32_t members_len,
			     const uint32_t *members)
{
	uint64_t at_ns = now_ns();
	struct bench *b = bench_of(handle);
	(void)members_len;
	(void)members;
	if (ring_id.nodeid == b->leader_nodeid || ring_id.nodeid == 0)
		return;
	b->leader_nodeid = ring_id.nodeid;
	char detail[16];
	snprintf(detail, sizeof detail, "%u", ring_id.nodeid - 1);
	event_write(b, at_ns, "leader", detail);
}

/* ---- corosync --------------------------------------------------------------------------- */

static bool cpg_connect(struct bench *b)
{
	cpg_model_v1_data_t model = {
		.model = CPG_MODEL_V1,
		.cpg_deliver_fn = on_deliver,
		.cpg_confchg_fn = on_confchg,
		.cpg_totem_confchg_fn = on_totem_confchg,
		.flags = CPG_MODEL_V1_DELIVER_INITIAL_TOTEM_CONF,
	};
	cs_error_t e = cpg_model_initialize(&b->handle, CPG_MODEL_V1, (cpg_model_data_t *)&model, b);
	if (e != CS_OK) {
		set_error(b, "cpg_model_initialize: %s (is corosync running in this namespace?)", cs_name(e));
		return false;
	}
	b->connected = true;
	for (int i = 0; i < CONNECT_TRIES; i++) {
		e = cpg_join(b->handle, &b->group);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(10000);
	}
	if (e == CS_OK)
		e = cpg_fd_get(b->handle, &b->fd);
	if (e != CS_OK) {
		set_error(b, "cpg_join/cpg_fd_get of group %s: %s", b->opt.group, cs_name(e));
		return false;
	}
	return true;
}

static void dispatch(struct bench *b)
{
	cs_error_t e = cpg_dispatch(b->handle, CS_DISPATCH_ALL);
	if (e != CS_OK && e != CS_ERR_TRY_AGAIN)
		set_error(b, "lost connection to corosync (cpg_dispatch: %s)", cs_name(e));
}

/* One cpg_mcast_joined of the next message; CS_OK, CS_ERR_TRY_AGAIN or the failure. */
static cs_error_t send_one(struct bench *b)
{
	uint64_t send_ns = now_ns();
	uint64_t seq = htole64(b->sent), stamp = htole64(send_ns);
	memcpy(b->msg + 8, &seq, 8);
	memcpy(b->msg + 16, &stamp, 8);
	struct iovec iov = {.iov_base = b->msg, .iov_len = b->opt.size};
	cs_error_t e = cpg_mcast_joined(b->handle, CPG_TYPE_AGREED, &iov, 1);
	b->flow_blocked = e == CS_ERR_TRY_AGAIN;
	if (e == CS_OK) {
		if (b->sent == 0)
			b->first_send_ns = send_ns;
		b->last_send_ns = send_ns;
		b->sent++;
	} else if (e == CS_ERR_TRY_AGAIN) {
		b->retries++;
	} else if (connection_lost(e)) {
		set_error(b, "lost connection to corosync (cpg_mcast_joined: %s)", cs_name(e));
	} else {
		b->send_errors++;
	}
	return e;
}

/* ---- the run ---------------------------------------------------------------------------- */

struct schedule {
	uint64_t start_ns;
	uint64_t send_end_ns;
	uint64_t drain_max_end_ns;
};

static uint64_t slot_ns(const struct bench *b, const struct schedule *s, uint64_t slot)
{
	return s->start_ns + (uint64_t)((double)slot * 1e9 / b->opt.rate);
}

static bool window_full(const struct bench *b)
{
	return b->opt.inflight > 0 && b->sent - b->own_delivered >= b->opt.inflight;
}

/* The next instant a send is due, or UINT64_MAX when none is: a paced slot is due if it falls
 * before the end of sending, even when the client reaches it late. */
static uint64_t next_send_ns(const struct bench *b, const struct schedule *s, uint64_t now)
{
	if (b->opt.rate == 0)
		return (now < s->send_end_ns && !window_full(b)) ? s->start_ns : UINT64_MAX;
	uint64_t at = slot_ns(b, s, b->slot);
	return at < s->send_end_ns ? at : UINT64_MAX;
}

/* Sends what is due at `now` (at most BURST_MAX messages); stops at flow control. A paced slot
 * whose send failed for good is skipped (counted in send_errors); a refused one is kept. */
static void send_due(struct bench *b, const struct schedule *s, uint64_t now)
{
	for (int i = 0; i < BURST_MAX && b->error[0] == '\0'; i++) {
		if (next_send_ns(b, s, now) > now)
			return;
		cs_error_t e = send_one(b);
		if (e == CS_ERR_TRY_AGAIN)
			return;
		b->slot++;
	}
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Waits for corosync's fd until the next thing to do, then dispatches what arrived. */
static void wait_and_dispatch(struct bench *b, const struct schedule *s, uint64_t now)
{
	uint64_t until = min_u64(s->drain_max_end_ns, now + WAIT_MAX_NS);
	uint64_t next_ns = next_send_ns(b, s, now);
	if (b->flow_blocked && next_ns != UINT64_MAX) {
		dispatch(b); /* deliveries are what frees corosync's queues */
		until = min_u64(until, now + RETRY_WAIT_NS);
	} else {
		until = min_u64(until, next_ns);
	}
	uint64_t wait_ns = until > now ? until - now : 0;
	struct timespec timeout = {.tv_sec = (time_t)(wait_ns / NS_PER_S),
				   .tv_nsec = (long)(wait_ns % NS_PER_S)};
	struct pollfd pfd = {.fd = b->fd, .events = POLLIN};
	int n = ppoll(&pfd, 1, &timeout, NULL);
	if (n < 0 && errno != EINTR) {
		set_error(b, "ppoll: %s", strerror(errno));
		return;
	}
	if (n > 0 && (pfd.revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL)))
		dispatch(b);
	if (n > 0 && (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
		set_error(b, "lost connection to corosync (its IPC socket closed)");
}

/* The end of the run: --drain quiet seconds after the end of sending with nothing of our own
 * outstanding, or --drain-max seconds after the end of sending. */
static bool drained(const struct bench *b, const struct schedule *s, uint64_t now)
{
	if (now < s->send_end_ns)
		return false;
	if (now >= s->drain_max_end_ns)
		return true;
	uint64_t quiet_since = b->last_delivery_ns > s->send_end_ns ? b->last_delivery_ns : s->send_end_ns;
	return now - quiet_since >= (uint64_t)(b->opt.drain_s * 1e9) && b->own_delivered >= b->sent;
}

static void run(struct bench *b)
{
	struct schedule s;
	s.start_ns = b->opt.start_at_ns;
	s.send_end_ns = s.start_ns + (uint64_t)(b->opt.duration_s * 1e9);
	s.drain_max_end_ns = s.send_end_ns + (uint64_t)(b->opt.drain_max_s * 1e9);
	if (now_ns() > s.start_ns)
		fprintf(stderr, "cpg_bench: node %d: --start-at is %.3f s in the past\n", b->opt.node,
			(double)(now_ns() - s.start_ns) / 1e9);
	while (!stop_requested && b->error[0] == '\0') {
		uint64_t now = now_ns();
		if (drained(b, &s, now))
			break;
		send_due(b, &s, now);
		if (b->error[0] != '\0')
			break;
		wait_and_dispatch(b, &s, now_ns());
	}
}

/* ---- output ----------------------------------------------------------------------------- */

static bool write_records(const struct bench *b)
{
	FILE *f = fopen(b->opt.records_path, "w");
	if (f == NULL)
		return false;
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	fputs("sender,seq,send_ns,recv_ns\n", f);
	for (size_t i = 0; i < b->records_len; i++) {
		const struct record *r = &b->records[i];
		fprintf(f, "%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", r->sender, r->seq, r->send_ns,
			r->recv_ns);
	}
	return fclose(f) == 0;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

static bool write_summary(const struct bench *b)
{
	FILE *f = fopen(b->opt.summary_path, "w");
	if (f == NULL)
		return false;
	fprintf(f, "{\"node\": %d, \"clock\": \"realtime\", \"sent\": %" PRIu64 ", \"send_errors\": %" PRIu64
		   ", \"retries\": %" PRIu64 ", \"delivered\": %zu, ",
		b->opt.node, b->sent, b->send_errors, b->retries, b->records_len);
	if (b->sent > 0)
		fprintf(f, "\"first_send_ns\": %" PRIu64 ", \"last_send_ns\": %" PRIu64 ", ", b->first_send_ns,
			b->last_send_ns);
	else
		fputs("\"first_send_ns\": null, \"last_send_ns\": null, ", f);
	fputs("\"error\": ", f);
	if (b->error[0] != '\0')
		json_string(f, b->error);
	else
		fputs("null", f);
	fputs("}\n", f);
	return fclose(f) == 0;
}

/* ---- main ------------------------------------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void install_signals(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_signal; /* no SA_RESTART: ppoll returns at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Allocations and files before the first contact with corosync. */
static bool bench_init(struct bench *b)
{
	b->group.length = (uint32_t)strlen(b->opt.group);
	memcpy(b->group.value, b->opt.group, b->group.length);
	b->msg = calloc(1, b->opt.size);
	double expected = 4.0 * b->opt.rate * b->opt.duration_s * 1.1; /* 4 senders, paced */
	size_t cap = expected > (double)RECORDS_INITIAL ? (size_t)expected : RECORDS_INITIAL;
	if (b->msg == NULL || !records_reserve(b, cap)) {
		set_error(b, "out of memory");
		return false;
	}
	uint32_t node = htole32((uint32_t)b->opt.node), magic = htole32(MSG_MAGIC);
	memcpy(b->msg, &node, 4);
	memcpy(b->msg + 4, &magic, 4);
	if (b->opt.events_path != NULL) {
		b->events = fopen(b->opt.events_path, "w");
		if (b->events == NULL) {
			set_error(b, "cannot open %s: %s", b->opt.events_path, strerror(errno));
			return false;
		}
		fputs("at_ns,kind,detail\n", b->events);
	}
	return true;
}

int main(int argc, char **argv)
{
	static struct bench b;
	if (!parse_options(argc, argv, &b.opt)) {
		usage(stderr);
		return 2;
	}
	install_signals();
	if (bench_init(&b) && cpg_connect(&b))
		run(&b);
	if (b.connected)
		cpg_finalize(b.handle);
	if (b.events != NULL)
		fclose(b.events);
	bool written = write_records(&b);
	written = write_summary(&b) && written;
	if (!written)
		fprintf(stderr, "cpg_bench: node %d: cannot write %s or %s: %s\n", b.opt.node, b.opt.records_path,
			b.opt.summary_path, strerror(errno));
	if (b.error[0] != '\0')
		fprintf(stderr, "cpg_bench: node %d: %s\n", b.opt.node, b.error);
	fprintf(stderr, "cpg_bench: node %d: sent %" PRIu64 ", retries %" PRIu64 ", send errors %" PRIu64
			", delivered %zu\n",
		b.opt.node, b.sent, b.retries, b.send_errors, b.records_len);
	return (b.error[0] != '\0' || !written) ? 1 : 0;
}
