// Frames of every section type, made by the project's own encoder (lib/core wire, batch,
// otfp_wire, ic_wire), for the Wireshark dissector's test (tests/wireshark/dissector_test.py):
//
//   tob-golden-frames OUT.pcap OUT.jsonl
//
// OUT.pcap: one Ethernet frame per record (classic pcap, LINKTYPE_ETHERNET), the TOB payload
// behind the cluster MAC, untagged or 802.1Q-tagged. OUT.jsonl: one line per frame, in order,
// {"name": ..., "fields": {"tob.FIELD": [values...]}}: what the dissector must show for that
// frame (every occurrence of each field, in order; numbers as integers).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/bytes.h"
#include "core/ic_wire.h"
#include "core/otfp_wire.h"
#include "core/wire.h"

namespace {

using namespace tob::core;
using Bytes = std::vector<uint8_t>;
using Fields = std::map<std::string, std::vector<std::string>>;

struct Record {
  std::string name;
  Bytes ether;  // the whole Ethernet frame
  Fields fields;
};

std::vector<Record> g_records;

constexpr uint8_t kClusterMac[6] = {0x01, 0x1b, 0x19, 0x00, 0x00, 0x00};

Bytes ethernet(std::span<const uint8_t> payload, uint8_t sender, int vlan) {
  Bytes f;
  f.reserve(18 + payload.size());
  for (uint8_t b : kClusterMac) f.push_back(b);
  for (uint8_t b : {uint8_t{0x02}, uint8_t{0}, uint8_t{0}, uint8_t{0}, uint8_t{0}, static_cast<uint8_t>(sender + 1)})
    f.push_back(b);
  if (vlan >= 0) {
    f.push_back(0x81);
    f.push_back(0x00);
    const uint16_t tci = static_cast<uint16_t>((5u << 13) | static_cast<unsigned>(vlan));  // PCP 5
    f.push_back(static_cast<uint8_t>(tci >> 8));
    f.push_back(static_cast<uint8_t>(tci & 0xFF));
  }
  f.push_back(static_cast<uint8_t>(kEtherType >> 8));
  f.push_back(static_cast<uint8_t>(kEtherType & 0xFF));
  for (uint8_t b : payload) f.push_back(b);
  return f;
}

std::string num(uint64_t v) { return std::to_string(v); }
std::string inum(int64_t v) { return std::to_string(v); }

void add(const std::string& name, std::span<const uint8_t> payload, uint8_t sender, Fields fields, int vlan = -1) {
  g_records.push_back({name, ethernet(payload, sender, vlan), std::move(fields)});
}

FrameHeader header(NodeId sender, uint64_t cycle) {
  FrameHeader h;
  h.cluster_id = 7;
  h.sender = sender;
  h.cycle = cycle;
  h.view_vector = 0b1011;
  h.stage = Stage::member;
  h.suspected = kNoNode;
  return h;
}

void fail(const char* what) {
  std::fprintf(stderr, "tob-golden-frames: %s\n", what);
  std::exit(1);
}

// A batch of `msgs` into an open section; the fields it should show.
void write_batch(FrameWriter& w, const std::vector<AppMessage>& msgs, Fields& f, NodeId sender) {
  auto body = w.open_section(SectionType::app_batch, 0, w.room());
  BatchWriter bw(body);
  for (const AppMessage& m : msgs) {
    if (!bw.add(m)) fail("batch does not fit");
    f["tob.msg.sender"].push_back(num(sender));
    f["tob.msg.id"].push_back(num(m.msg_id));
    f["tob.msg.submit_ns"].push_back(inum(m.submit_ns));
    f["tob.msg.client"].push_back(num(m.client));
    f["tob.msg.length"].push_back(num(m.payload.size()));
  }
  f["tob.batch.count"].push_back(num(msgs.size()));
  w.close_section(bw.finish());
}

std::span<const uint8_t> text(const char* s) {
  return {reinterpret_cast<const uint8_t*>(s), std::char_traits<char>::length(s)};
}

void slot_frames() {
  // 1. A member's slot: membership and a batch of three messages; then its second copy, and the
  // same frame behind an 802.1Q tag.
  static const uint8_t binary[] = {0x00, 0xff, 0x10};
  const std::vector<AppMessage> msgs = {
      {1000, 1'700'000'000'000'000'001, 1, text("alpha")},
      {1001, -5, 2, {}},
      {1002, 42, 3, binary},
  };
  Bytes buf(1500);
  FrameWriter w(buf);
  w.begin(header(2, 17'955'230'944ull));
  uint8_t members[kMembershipBodyBytes];
  store_be64(members, 0b1011);
  w.add_section(SectionType::membership, 0, members);
  Fields f;
  write_batch(w, msgs, f, 2);
  const size_t n = w.finish();
  if (n == 0) fail("slot frame");
  buf.resize(n);
  f["tob.sender"] = {"2"};
  f["tob.cycle"] = {"17955230944"};
  f["tob.cluster"] = {"7"};
  f["tob.view"] = {num(0b1011)};
  f["tob.stage"] = {"2"};
  f["tob.suspected"] = {"255"};
  f["tob.flags"] = {"0"};
  f["tob.members"] = {num(0b1011)};
  f["tob.section.type"] = {"8", "1"};
  f["tob.section_count"] = {"2"};
  f["tob.crc.status"] = {"1"};
  f["tob.msg.text"] = {"alpha"};
  add("member slot: membership + batch of 3", buf, 2, f);
  add("the same behind 802.1Q VLAN 100", buf, 2, f, 100);
  Bytes copy = buf;
  mark_second_copy(copy);
  f["tob.flags"] = {"1"};
  add("second copy", copy, 2, f);
}

void segment_frame() {
  // 2. Segment 1 of 2 of a slot's batch (docs/protocol-mars.md "A slot's batch in several frames").
  Bytes buf(1500);
  FrameWriter w(buf);
  FrameHeader h = header(1, 500);
  h.segment_index = 1;
  h.segment_count = 2;
  w.begin(h);
  Fields f;
  write_batch(w, {{77, 1, 9, text("segment")}}, f, 1);
  const size_t n = w.finish();
  if (n == 0) fail("segment frame");
  buf.resize(n);
  f["tob.segment.index"] = {"1"};
  f["tob.segment.count"] = {"2"};
  f["tob.crc.status"] = {"1"};
  add("segment 1 of 2", buf, 1, f);
}

OtfpVote vote(int64_t instance, uint32_t b, uint64_t mask, uint64_t digest) {
  OtfpVote v;
  v.instance = instance;
  v.ballot = b;
  v.value.mask = mask;
  v.value.digest = digest;
  return v;
}

void otfp_frames() {
  // 3. An otfp frame with every otfp section: state, 2b votes, 2a, decided, requests, 1a, ANY, 1b.
  Bytes buf(1500);
  FrameWriter w(buf);
  w.begin(header(3, 9000));
  Fields f;
  const uint32_t fast = ballot(3, false, 2);
  const uint32_t classic = ballot(3, true, 2);
  auto sec = [&](SectionType t, size_t len) {
    w.close_section(len);
    f["tob.section.type"].push_back(num(static_cast<uint8_t>(t)));
  };
  sec(SectionType::otfp_state, write_state(w.open_section(SectionType::otfp_state, 0, w.room()), 41, fast));
  f["tob.low"].push_back("41");
  f["tob.ballot"].push_back(num(fast));
  const std::vector<OtfpVote> votes = {vote(41, fast, 0b111, 0x1122334455667788ull), vote(42, classic, 0b101, 7)};
  for (SectionType t : {SectionType::otfp_vote, SectionType::otfp_phase2a, SectionType::otfp_decided}) {
    sec(t, write_votes(w.open_section(t, 0, w.room()), votes));
    for (const OtfpVote& v : votes) {
      f["tob.vote.instance"].push_back(inum(v.instance));
      f["tob.vote.ballot"].push_back(num(v.ballot));
      f["tob.vote.mask"].push_back(num(v.value.mask));
      f["tob.vote.digest"].push_back(num(v.value.digest));
    }
  }
  OtfpRequest r1;
  r1.instance = 40;
  r1.sender = 1;
  r1.attempt = 2;
  OtfpRequest r2 = r1;
  r2.sender = 0;
  r2.target = 3;
  const std::vector<OtfpRequest> reqs = {r1, r2};
  sec(SectionType::retransmit_request,
      write_requests(w.open_section(SectionType::retransmit_request, 0, w.room()), reqs));
  f["tob.req.instance"] = {"40", "40"};
  f["tob.req.sender"] = {"1", "0"};
  f["tob.req.attempt"] = {"2", "2"};
  f["tob.req.target"] = {"255", "3"};
  f["tob.req.first"] = {"0", "0"};
  f["tob.req.last"] = {"65535", "65535"};
  sec(SectionType::otfp_phase1a,
      write_ballot_instance(w.open_section(SectionType::otfp_phase1a, 0, w.room()), classic, 39));
  f["tob.ballot"].push_back(num(classic));
  f["tob.low"].push_back("39");
  sec(SectionType::otfp_any, write_ballot_instance(w.open_section(SectionType::otfp_any, 0, w.room()), fast, 43));
  f["tob.ballot"].push_back(num(fast));
  f["tob.activation"] = {"43"};
  Phase1bPart part;
  part.ballot = classic;
  part.last = true;
  part.highest = 42;
  part.from = 41;
  part.to = kOtfpRangeOpen;
  sec(SectionType::otfp_phase1b, write_phase1b(w.open_section(SectionType::otfp_phase1b, 0, w.room()), part, votes));
  f["tob.ballot"].push_back(num(classic));
  f["tob.p1b.last"] = {"1"};
  f["tob.p1b.count"] = {"2"};
  f["tob.p1b.highest"] = {"42"};
  f["tob.p1b.from"] = {"41"};
  f["tob.p1b.to"] = {inum(kOtfpRangeOpen)};
  for (const OtfpVote& v : votes) {
    f["tob.vote.instance"].push_back(inum(v.instance));
    f["tob.vote.ballot"].push_back(num(v.ballot));
    f["tob.vote.mask"].push_back(num(v.value.mask));
    f["tob.vote.digest"].push_back(num(v.value.digest));
  }
  const size_t n = w.finish();
  if (n == 0 || w.failed()) fail("otfp frame");
  buf.resize(n);
  f["tob.crc.status"] = {"1"};
  add("otfp: state, votes, 2a, decided, requests, 1a, ANY, 1b", buf, 3, f);

  // 4. Retransmission data: segment 2 of 3 of node 0's batch of instance 40, served by node 3
  // in the slot's only aux frame.
  Bytes data(1500);
  FrameWriter d(data);
  FrameHeader h = header(3, 9000);
  h.flags = kFlagAux;
  d.begin(h);
  auto body = d.open_section(SectionType::retransmit_data, 0, d.room());
  const size_t head = write_data_header(body, {0, 40, 2, 3});
  BatchWriter bw(body.subspan(head));
  if (!bw.add({555, 12, 4, text("again")})) fail("retransmitted batch");
  d.close_section(head + bw.finish());
  const size_t dn = d.finish();
  if (dn == 0) fail("retransmission frame");
  data.resize(dn);
  Fields g;
  g["tob.section.type"] = {"5"};
  g["tob.rdata.sender"] = {"0"};
  g["tob.rdata.instance"] = {"40"};
  g["tob.rdata.index"] = {"2"};
  g["tob.rdata.count"] = {"3"};
  g["tob.flags.aux"] = {"1"};
  g["tob.msg.sender"] = {"0"};
  g["tob.msg.id"] = {"555"};
  g["tob.msg.text"] = {"again"};
  g["tob.crc.status"] = {"1"};
  add("retransmission data", data, 3, g);
}

void ic_frame() {
  // 5. IC round data (kind 2): two chunks of one round message of 20 bytes, chunk_bytes 16.
  Bytes message(20);
  for (size_t i = 0; i < message.size(); ++i) message[i] = static_cast<uint8_t>(i);
  const IcMessage msgs[] = {{12, 2, message}};
  IcFrameParams p;
  p.cluster_id = 7;
  p.sender = 1;
  p.cycle = 12 * 3 + 2;
  p.chunk_bytes = 16;
  p.frame_bytes_max = 1500;
  Bytes out(1500);
  size_t lengths[1] = {0};
  if (encode_ic_frames(msgs, p, out, lengths) != 1) fail("ic frame");
  out.resize(lengths[0]);
  Fields f;
  f["tob.kind"] = {"2"};
  f["tob.section.type"] = {"6", "6"};
  f["tob.ic.instance"] = {"12", "12"};
  f["tob.ic.round"] = {"2", "2"};
  f["tob.ic.chunk"] = {"0", "1"};
  f["tob.ic.message_bytes"] = {"20", "20"};
  f["tob.crc.status"] = {"1"};
  add("ic round data, 2 chunks", out, 1, f);
}

void other_sections() {
  // 6. Wake-up samples (section 7, appended as the daemon does) and a type no version defines:
  // the samples decoded, the unknown type shown as bytes, nothing refused.
  Bytes buf(1500);
  FrameWriter w(buf);
  w.begin(header(0, 3));
  const uint8_t raw[] = {1, 2, 3, 4};
  w.add_section(static_cast<SectionType>(99), 0, raw);
  const size_t n = w.finish();
  if (n == 0) fail("other sections");
  const WakeSample samples[] = {{1'795'000'000'000'000'000, 42'000}, {1'795'000'000'001'000'000, -5}};
  uint8_t body[2 * kWakeSampleBytes];
  const size_t grown = append_section(buf, n, SectionType::clock_sync, 0,
                                      std::span<const uint8_t>(body, encode_wake_samples(samples, body)));
  if (grown == 0) fail("wake-up samples");
  // 7. The rate window (section 14, appended as the daemon does, before section 7 there).
  uint8_t window[kClockWindowBytes];
  const size_t with_window = append_section(buf, grown, SectionType::clock_window, 0,
                                            std::span<const uint8_t>(window, encode_clock_window({14'023'456, -512'300}, window)));
  if (with_window == 0) fail("rate window");
  buf.resize(with_window);
  Fields f;
  f["tob.section.type"] = {"99", "7", "14"};
  f["tob.rate.window"] = {"14023456"};
  f["tob.rate.sum_ns"] = {"-512300"};
  f["tob.wake.release_ns"] = {"1795000000000000000", "1795000000001000000"};
  f["tob.wake.late_ns"] = {"42000", "-5"};
  f["tob.crc.status"] = {"1"};
  add("unknown section, wake-up samples and a rate window", buf, 0, f);
}

void write_pcap(const char* path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
  u32(0xa1b2c3d4);  // classic pcap, microseconds, host byte order
  u16(2);
  u16(4);
  u32(0);
  u32(0);
  u32(65535);
  u32(1);  // LINKTYPE_ETHERNET
  uint32_t t = 0;
  for (const Record& r : g_records) {
    u32(1'700'000'000u);
    u32(t++);
    u32(static_cast<uint32_t>(r.ether.size()));
    u32(static_cast<uint32_t>(r.ether.size()));
    out.write(reinterpret_cast<const char*>(r.ether.data()), static_cast<std::streamsize>(r.ether.size()));
  }
  if (!out) fail("cannot write the pcap");
}

void write_manifest(const char* path) {
  std::ofstream out(path, std::ios::trunc);
  for (const Record& r : g_records) {
    out << "{\"name\": \"" << r.name << "\", \"fields\": {";
    bool first = true;
    for (const auto& [field, values] : r.fields) {
      out << (first ? "" : ", ") << '"' << field << "\": [";
      for (size_t i = 0; i < values.size(); ++i) {
        const bool number = !values[i].empty() && values[i].find_first_not_of("-0123456789") == std::string::npos;
        out << (i ? ", " : "") << (number ? "" : "\"") << values[i] << (number ? "" : "\"");
      }
      out << "]";
      first = false;
    }
    out << "}}\n";
  }
  if (!out) fail("cannot write the manifest");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tob-golden-frames OUT.pcap OUT.jsonl\n");
    return 2;
  }
  slot_frames();
  segment_frame();
  otfp_frames();
  ic_frame();
  other_sections();
  write_pcap(argv[1]);
  write_manifest(argv[2]);
  std::printf("%zu frames\n", g_records.size());
  return 0;
}
