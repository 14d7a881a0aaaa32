-- Wireshark dissector for dpdk-tob slot frames (docs/wire-format.md), in Lua: no compiled plugin.
--
--   tshark -X lua_script:scripts/wireshark/dpdk_tob.lua -r node1.pcapng -Y tob
--   bash scripts/wireshark/install.sh        # into ~/.local/lib/wireshark/plugins
--
-- EtherType 0x88B5, with or without an 802.1Q tag (Wireshark's VLAN dissector hands the inner
-- EtherType to the same table). Display filter name `tob`; every field is `tob.*`
-- (once installed, `tshark -G fields | grep -P '\ttob\.'` lists them). It shows the header, every section type
-- (application batch and each message, membership, otfp votes, phases, decisions, state,
-- retransmission requests and data, IC round chunks), second copies, segments, and checks the
-- CRC32C trailer (tob.crc.status: Good or Bad), and the authentication trailer of frames of a
-- cluster with [security] (header flag bit 2; tob.auth.*: copy, key id, GMAC tag). The tag is shown,
-- not checked: the dissector has no key.
--
-- A frame the daemon's decoder (lib/core/wire.cc, decode_frame) would refuse is shown with
-- the same reason in `tob.error` and as expert info of group Malformed; a section body that its
-- codec would refuse is flagged the same way, and the dissection of that section stops there.
-- Every read is bounds-checked first, so a malformed frame never becomes a Lua error.
--
-- Versions: 2 is docs/wire-format.md (what daemons send). 1 (older captures) differs only in
-- sections 4 and 5 (a segment range per request, a segment number per retransmitted batch part)
-- and in the header flag aux (bit 1).

local tob = Proto("tob", "dpdk-tob Total Order Broadcast")

local ETHERTYPE = 0x88B5
local MAGIC = 0x70B1
local HEADER_BYTES = 36
local SECTION_HEADER_BYTES = 4
local TRAILER_BYTES = 4
local AUTH_TRAILER_BYTES = 20  -- after the CRC when flag bit 2 is set ([security])
local MAX_NODES = 64
local NO_NODE = 0xFF

-- bit operations: bit32 in Lua 5.2 (Wireshark up to 4.2), native operators from Lua 5.3 on.
local band, bxor, rshift
if bit32 then
  band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift
else
  band, bxor, rshift = load([[
    return function(a, b) return a & b end,
           function(a, b) return a ~ b end,
           function(a, n) return (a & 0xFFFFFFFF) >> n end]])()
end

-- CRC32C (Castagnoli, reflected 0x82F63B78), as lib/core/crc32c.cc.
local CRC_TABLE = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if band(c, 1) ~= 0 then c = bxor(rshift(c, 1), 0x82F63B78) else c = rshift(c, 1) end
  end
  CRC_TABLE[i] = c
end

local function crc32c(bytes, n)
  local crc = 0xFFFFFFFF
  for i = 0, n - 1 do
    crc = bxor(CRC_TABLE[band(bxor(crc, bytes:get_index(i)), 0xFF)], rshift(crc, 8))
  end
  return band(bxor(crc, 0xFFFFFFFF), 0xFFFFFFFF)
end

-- --- names --------------------------------------------------------------------------------------

local KIND = { [1] = "slot frame", [2] = "ic round data" }
local STAGE = { [0] = "inactive", [1] = "active (joining)", [2] = "member" }
local SECTION = {
  [1] = "application batch",
  [2] = "OTFP vote (phase 2b)",
  [3] = "OTFP phase 2a",
  [4] = "retransmission request",
  [5] = "retransmission data",
  [6] = "IC round data",
  [7] = "wake-up samples",
  [8] = "membership",
  [9] = "OTFP phase 1a",
  [10] = "OTFP phase 1b",
  [11] = "OTFP ANY",
  [12] = "OTFP state",
  [13] = "OTFP decided",
  [14] = "rate window",
}
local CRC_STATUS = { [0] = "Bad", [1] = "Good", [2] = "Unverified" }

-- --- fields -------------------------------------------------------------------------------------

local F = {
  magic = ProtoField.uint16("tob.magic", "Magic", base.HEX),
  version = ProtoField.uint8("tob.version", "Version", base.DEC),
  kind = ProtoField.uint8("tob.kind", "Kind", base.DEC, KIND),
  cluster = ProtoField.uint16("tob.cluster", "Cluster id", base.DEC),
  sender = ProtoField.uint8("tob.sender", "Sender", base.DEC),
  flags = ProtoField.uint8("tob.flags", "Flags", base.HEX),
  second_copy = ProtoField.bool("tob.flags.second_copy", "Second copy", 8, nil, 0x01),
  aux = ProtoField.bool("tob.flags.aux", "Aux frame (version 2: not a batch segment)", 8, nil, 0x02),
  authenticated = ProtoField.bool("tob.flags.authenticated", "Authenticated (a trailer follows the CRC)", 8, nil, 0x04),
  cycle = ProtoField.uint64("tob.cycle", "Cycle", base.DEC),
  seg_index = ProtoField.uint16("tob.segment.index", "Segment index", base.DEC),
  seg_count = ProtoField.uint16("tob.segment.count", "Segment count", base.DEC),
  view = ProtoField.uint64("tob.view", "View vector", base.HEX),
  view_nodes = ProtoField.string("tob.view.nodes", "Received last slot of"),
  stage = ProtoField.uint8("tob.stage", "Stage", base.DEC, STAGE),
  suspected = ProtoField.uint8("tob.suspected", "Suspected node", base.DEC, { [NO_NODE] = "none" }),
  section_count = ProtoField.uint16("tob.section_count", "Section count", base.DEC),
  section_bytes = ProtoField.uint32("tob.section_bytes", "Section bytes", base.DEC),
  crc = ProtoField.uint32("tob.crc", "CRC32C", base.HEX),
  crc_computed = ProtoField.uint32("tob.crc.computed", "CRC32C computed", base.HEX),
  crc_status = ProtoField.uint8("tob.crc.status", "CRC status", base.DEC, CRC_STATUS),
  error = ProtoField.string("tob.error", "Refused by the decoder"),
  padding = ProtoField.bytes("tob.padding", "Bytes after the CRC (Ethernet padding)"),
  auth = ProtoField.none("tob.auth", "Authentication trailer (docs/wire-format.md \"Authenticated frames\")"),
  auth_copy = ProtoField.uint8("tob.auth.copy", "Copy in the slot (aux frames: sends per slot)", base.DEC),
  auth_reserved = ProtoField.uint8("tob.auth.reserved", "Reserved", base.HEX),
  auth_key_id = ProtoField.uint16("tob.auth.key_id", "Key id", base.HEX),
  auth_tag = ProtoField.bytes("tob.auth.tag", "AES-256-GMAC tag (not checked: no key here)"),

  section = ProtoField.none("tob.section", "Section"),
  sec_type = ProtoField.uint8("tob.section.type", "Type", base.DEC, SECTION),
  sec_flags = ProtoField.uint8("tob.section.flags", "Flags", base.HEX),
  sec_length = ProtoField.uint16("tob.section.length", "Length", base.DEC),
  sec_body = ProtoField.bytes("tob.section.body", "Body"),

  batch_count = ProtoField.uint16("tob.batch.count", "Messages", base.DEC),
  batch_reserved = ProtoField.uint16("tob.batch.reserved", "Reserved", base.HEX),
  msg = ProtoField.none("tob.msg", "Message"),
  msg_sender = ProtoField.uint8("tob.msg.sender", "Sender", base.DEC),
  msg_id = ProtoField.uint64("tob.msg.id", "Message id", base.DEC),
  msg_submit = ProtoField.int64("tob.msg.submit_ns", "Submit instant (ns, global time)", base.DEC),
  msg_client = ProtoField.uint16("tob.msg.client", "Client", base.DEC),
  msg_length = ProtoField.uint16("tob.msg.length", "Length", base.DEC),
  msg_payload = ProtoField.bytes("tob.msg.payload", "Payload"),
  msg_text = ProtoField.string("tob.msg.text", "Payload text"),

  list_count = ProtoField.uint16("tob.list.count", "Entries", base.DEC),
  list_reserved = ProtoField.uint16("tob.list.reserved", "Reserved", base.HEX),
  vote = ProtoField.none("tob.vote", "Vote"),
  vote_instance = ProtoField.int64("tob.vote.instance", "Instance", base.DEC),
  vote_ballot = ProtoField.uint32("tob.vote.ballot", "Ballot", base.HEX),
  vote_mask = ProtoField.uint64("tob.vote.mask", "Sender mask", base.HEX),
  vote_senders = ProtoField.string("tob.vote.senders", "Batches of"),
  vote_digest = ProtoField.uint64("tob.vote.digest", "Digest", base.HEX),

  req = ProtoField.none("tob.req", "Request"),
  req_instance = ProtoField.int64("tob.req.instance", "Instance", base.DEC),
  req_sender = ProtoField.uint8("tob.req.sender", "Batch of sender", base.DEC),
  req_attempt = ProtoField.uint8("tob.req.attempt", "Attempt", base.DEC),
  req_target = ProtoField.uint8("tob.req.target", "Acceptor asked", base.DEC,
    { [NO_NODE] = "the partition's acceptor for the attempt" }),
  req_reserved = ProtoField.uint8("tob.req.reserved", "Reserved", base.HEX),
  req_first = ProtoField.uint16("tob.req.first", "First segment", base.DEC),
  req_last = ProtoField.uint16("tob.req.last", "Last segment", base.DEC),

  data_sender = ProtoField.uint8("tob.rdata.sender", "Batch of sender", base.DEC),
  data_reserved = ProtoField.uint8("tob.rdata.reserved", "Reserved", base.HEX),
  data_index = ProtoField.uint16("tob.rdata.index", "Segment index", base.DEC),
  data_instance = ProtoField.int64("tob.rdata.instance", "Instance", base.DEC),
  data_count = ProtoField.uint16("tob.rdata.count", "Segment count", base.DEC),
  data_reserved2 = ProtoField.uint16("tob.rdata.reserved2", "Reserved", base.HEX),

  ic_instance = ProtoField.uint64("tob.ic.instance", "IC instance", base.DEC),
  ic_round = ProtoField.uint8("tob.ic.round", "Round", base.DEC),
  ic_reserved = ProtoField.uint8("tob.ic.reserved", "Reserved", base.HEX),
  ic_chunk = ProtoField.uint16("tob.ic.chunk", "Chunk index", base.DEC),
  ic_message_bytes = ProtoField.uint32("tob.ic.message_bytes", "Round message bytes", base.DEC),
  ic_data = ProtoField.bytes("tob.ic.data", "Chunk data"),

  wake_release = ProtoField.int64("tob.wake.release_ns", "Release instant (ns)", base.DEC),
  wake_late = ProtoField.int32("tob.wake.late_ns", "Woke late by (ns)", base.DEC),
  wake_reserved = ProtoField.uint32("tob.wake.reserved", "Reserved", base.HEX),
  rate_window = ProtoField.int64("tob.rate.window", "Rate window", base.DEC),
  rate_sum = ProtoField.int64("tob.rate.sum_ns", "Sum of corrections (ns)", base.DEC),
  members = ProtoField.uint64("tob.members", "Members", base.HEX),
  members_nodes = ProtoField.string("tob.members.nodes", "Member nodes"),

  ballot = ProtoField.uint32("tob.ballot", "Ballot", base.HEX),
  low = ProtoField.int64("tob.low", "Lowest undelivered instance", base.DEC),
  activation = ProtoField.int64("tob.activation", "Fast from instance", base.DEC),
  p1b_last = ProtoField.uint8("tob.p1b.last", "Last part", base.DEC),
  p1b_reserved = ProtoField.uint8("tob.p1b.reserved", "Reserved", base.HEX),
  p1b_count = ProtoField.uint16("tob.p1b.count", "Votes", base.DEC),
  p1b_highest = ProtoField.int64("tob.p1b.highest", "Highest instance voted (-1 none)", base.DEC),
  p1b_from = ProtoField.int64("tob.p1b.from", "From instance", base.DEC),
  p1b_to = ProtoField.int64("tob.p1b.to", "To instance (exclusive)", base.DEC),
}
local field_list = {}
for _, f in pairs(F) do field_list[#field_list + 1] = f end
tob.fields = field_list

local E = {
  malformed = ProtoExpert.new("tob.malformed", "Malformed TOB frame", expert.group.MALFORMED,
    expert.severity.ERROR),
  section_malformed = ProtoExpert.new("tob.section.malformed", "Malformed TOB section",
    expert.group.MALFORMED, expert.severity.ERROR),
  bad_crc = ProtoExpert.new("tob.crc.bad", "Bad CRC32C", expert.group.CHECKSUM, expert.severity.ERROR),
  unknown_section = ProtoExpert.new("tob.section.unknown", "Unknown section type (receivers skip it)",
    expert.group.UNDECODED, expert.severity.NOTE),
  auth_bad = ProtoExpert.new("tob.auth.bad", "Authentication trailer cut short or malformed (receivers with a key refuse it: rx_auth_failed)",
    expert.group.MALFORMED, expert.severity.ERROR),
}
tob.experts = { E.malformed, E.section_malformed, E.bad_crc, E.unknown_section, E.auth_bad }

-- --- helpers ------------------------------------------------------------------------------------

-- "0, 1, 3" for a 64-bit mask (a UInt64).
local function node_list(mask)
  local names = {}
  local lo, hi = mask:lower(), mask:higher()
  for k = 0, 31 do
    if band(rshift(lo, k), 1) == 1 then names[#names + 1] = tostring(k) end
  end
  for k = 0, 31 do
    if band(rshift(hi, k), 1) == 1 then names[#names + 1] = tostring(k + 32) end
  end
  if #names == 0 then return "none" end
  return table.concat(names, ", ")
end

local function ballot_text(b)
  -- round << 7 | coordinator << 1 | classic (docs/wire-format.md)
  local kind = (band(b, 1) == 1) and "classic" or "fast"
  return string.format("round %d, coordinator %d, %s", rshift(b, 7), band(rshift(b, 1), 0x3F), kind)
end

local function printable(s)
  return s:match("^[%g ]*$") ~= nil
end

-- The first malformed section body of the frame being dissected (dissection is one frame at a
-- time; tob.dissector resets it).
local bad_section_text = nil

-- A malformed section body: expert info on the section item; the caller stops there.
local function bad_section(item, _, text)
  item:add_proto_expert_info(E.section_malformed, text)
  bad_section_text = bad_section_text or text
  return false
end

-- --- section bodies -----------------------------------------------------------------------------
-- Each takes (tvb range of the body, tree, pinfo, ctx) and returns true when the body is well
-- formed, else adds expert info and returns false. ctx: {version, sender, messages}.

-- Application batch (type 1) and the batch part of retransmission data (type 5).
local function dissect_batch(body, tree, pinfo, ctx, sender)
  local n = body:len()
  if n < 4 then return bad_section(tree, pinfo, "batch shorter than its 4-byte header") end
  local count = body:range(0, 2):uint()
  tree:add(F.batch_count, body:range(0, 2))
  tree:add(F.batch_reserved, body:range(2, 2))
  local off = 4
  for i = 1, count do
    if n - off < 20 then
      return bad_section(tree, pinfo, string.format("batch says %d messages, entry %d runs past the body", count, i))
    end
    local len = body:range(off + 18, 2):uint()
    if n - off - 20 < len then
      return bad_section(tree, pinfo,
        string.format("message %d: payload of %d bytes runs past the body", i, len))
    end
    local entry = body:range(off, 20 + len)
    local id = body:range(off, 8):uint64()
    local mt = tree:add(F.msg, entry)
    mt:add(F.msg_sender, entry, sender):set_generated()
    mt:add(F.msg_id, body:range(off, 8))
    mt:add(F.msg_submit, body:range(off + 8, 8))
    mt:add(F.msg_client, body:range(off + 16, 2))
    mt:add(F.msg_length, body:range(off + 18, 2))
    local text = ""
    if len > 0 then
      local payload = body:range(off + 20, len)
      mt:add(F.msg_payload, payload)
      local s = payload:raw()
      if printable(s) then
        mt:add(F.msg_text, payload, s)
        text = string.format(" \"%s\"", #s > 40 and s:sub(1, 40) .. "..." or s)
      end
    end
    mt:set_text(string.format("Message %d of %d: sender %d, id %s, client %d, %d bytes%s", i, count,
      sender, tostring(id), body:range(off + 16, 2):uint(), len, text))
    ctx.messages = ctx.messages + 1
    off = off + 20 + len
  end
  if off ~= n then
    return bad_section(tree, pinfo, string.format("%d bytes after the last of %d messages", n - off, count))
  end
  return true
end

local function add_vote(tree, body, off, label)
  local b = body:range(off + 8, 4):uint()
  local mask = body:range(off + 12, 8):uint64()
  local vt = tree:add(F.vote, body:range(off, 28))
  vt:add(F.vote_instance, body:range(off, 8))
  vt:add(F.vote_ballot, body:range(off + 8, 4)):append_text(" (" .. ballot_text(b) .. ")")
  vt:add(F.vote_mask, body:range(off + 12, 8))
  vt:add(F.vote_senders, body:range(off + 12, 8), node_list(mask)):set_generated()
  vt:add(F.vote_digest, body:range(off + 20, 8))
  vt:set_text(string.format("%s: instance %s, ballot 0x%x (%s), batches of %s", label,
    tostring(body:range(off, 8):int64()), b, ballot_text(b), node_list(mask)))
end

-- Types 2, 3, 13: count u16, 0 u16, count x Vote (28 bytes).
local function dissect_vote_list(label)
  return function(body, tree, pinfo)
    local n = body:len()
    if n < 4 then return bad_section(tree, pinfo, "vote list shorter than its 4-byte header") end
    local count = body:range(0, 2):uint()
    tree:add(F.list_count, body:range(0, 2))
    tree:add(F.list_reserved, body:range(2, 2))
    if n ~= 4 + 28 * count then
      return bad_section(tree, pinfo, string.format("%d votes need %d bytes, the body has %d", count,
        4 + 28 * count, n))
    end
    for i = 0, count - 1 do add_vote(tree, body, 4 + 28 * i, label) end
    return true
  end
end

-- Type 4: count u16, 0 u16, then requests of 12 bytes (version 1) or 16 (version 2: + first u16,
-- last u16, the segments wanted).
local function dissect_requests(body, tree, pinfo, ctx)
  local n = body:len()
  local size = (ctx.version >= 2) and 16 or 12
  if n < 4 then return bad_section(tree, pinfo, "request list shorter than its 4-byte header") end
  local count = body:range(0, 2):uint()
  tree:add(F.list_count, body:range(0, 2))
  tree:add(F.list_reserved, body:range(2, 2))
  if n ~= 4 + size * count then
    return bad_section(tree, pinfo, string.format("%d requests need %d bytes, the body has %d", count,
      4 + size * count, n))
  end
  for i = 0, count - 1 do
    local off = 4 + size * i
    local rt = tree:add(F.req, body:range(off, size))
    rt:add(F.req_instance, body:range(off, 8))
    rt:add(F.req_sender, body:range(off + 8, 1))
    rt:add(F.req_attempt, body:range(off + 9, 1))
    rt:add(F.req_target, body:range(off + 10, 1))
    rt:add(F.req_reserved, body:range(off + 11, 1))
    local segs = ""
    if size == 16 then
      rt:add(F.req_first, body:range(off + 12, 2))
      rt:add(F.req_last, body:range(off + 14, 2))
      segs = string.format(", segments %d..%d", body:range(off + 12, 2):uint(), body:range(off + 14, 2):uint())
    end
    rt:set_text(string.format("Request: batch of node %d, instance %s, attempt %d%s",
      body:range(off + 8, 1):uint(), tostring(body:range(off, 8):int64()), body:range(off + 9, 1):uint(), segs))
  end
  return true
end

-- Type 5: sender u8, 0 u8, 0 u16 (version 2: segment index), instance u64 (version 2: + count
-- u16, 0 u16), then the batch body.
local function dissect_retransmit_data(body, tree, pinfo, ctx)
  local n = body:len()
  local head = (ctx.version >= 2) and 16 or 12
  if n < head then
    return bad_section(tree, pinfo, string.format("retransmission data shorter than its %d-byte header", head))
  end
  local sender = body:range(0, 1):uint()
  tree:add(F.data_sender, body:range(0, 1))
  tree:add(F.data_reserved, body:range(1, 1))
  tree:add(F.data_index, body:range(2, 2))
  tree:add(F.data_instance, body:range(4, 8))
  if head == 16 then
    tree:add(F.data_count, body:range(12, 2))
    tree:add(F.data_reserved2, body:range(14, 2))
    local index, count = body:range(2, 2):uint(), body:range(12, 2):uint()
    if count == 0 or index >= count then
      return bad_section(tree, pinfo, string.format("segment %d of %d", index, count))
    end
  end
  if sender >= MAX_NODES then
    return bad_section(tree, pinfo, string.format("sender %d out of range", sender))
  end
  return dissect_batch(body:range(head, n - head), tree, pinfo, ctx, sender)
end

-- Type 6: instance u64, round u8, 0 u8, chunk u16, message_bytes u32, chunk data.
local function dissect_ic_round(body, tree, pinfo)
  local n = body:len()
  if n < 16 then return bad_section(tree, pinfo, "IC chunk shorter than its 16-byte header") end
  tree:add(F.ic_instance, body:range(0, 8))
  tree:add(F.ic_round, body:range(8, 1))
  tree:add(F.ic_reserved, body:range(9, 1))
  tree:add(F.ic_chunk, body:range(10, 2))
  tree:add(F.ic_message_bytes, body:range(12, 4))
  if n > 16 then tree:add(F.ic_data, body:range(16, n - 16)) end
  tree:append_text(string.format(": instance %s, round %d, chunk %d, %d of %d bytes",
    tostring(body:range(0, 8):uint64()), body:range(8, 1):uint(), body:range(10, 2):uint(), n - 16,
    body:range(12, 4):uint()))
  if body:range(9, 1):uint() ~= 0 then return bad_section(tree, pinfo, "reserved byte set") end
  return true
end

-- Type 7: 1..4 x (release_ns i64, late_ns i32, 0 u32): the sender's wake-ups for release instants
-- (telemetry, docs/wire-format.md "Section 7: wake-up samples").
local function dissect_wake(body, tree, pinfo)
  local n = body:len()
  if n == 0 or n % 16 ~= 0 or n > 64 then
    return bad_section(tree, pinfo, string.format("wake-up samples of %d bytes, not 1 to 4 x 16", n))
  end
  for off = 0, n - 16, 16 do
    local t = tree:add(body:range(off, 16), string.format("Wake-up: release %s, %d ns late",
      tostring(body:range(off, 8):int64()), body:range(off + 8, 4):int()))
    t:add(F.wake_release, body:range(off, 8))
    t:add(F.wake_late, body:range(off + 8, 4))
    t:add(F.wake_reserved, body:range(off + 12, 4))
  end
  tree:append_text(string.format(": %d instant%s", n / 16, n == 16 and "" or "s"))
  return true
end

-- Type 14: window i64, sum_ns i64: the sender's latest rate window of in-band clock
-- synchronisation and the sum of its corrections over it (docs/wire-format.md "Section 14: rate
-- windows"); sum -2^63: not whole (a round clipped, or before integration).
local function dissect_rate_window(body, tree, pinfo)
  if body:len() ~= 16 then
    return bad_section(tree, pinfo, string.format("rate window of %d bytes, not 16", body:len()))
  end
  tree:add(F.rate_window, body:range(0, 8))
  tree:add(F.rate_sum, body:range(8, 8))
  local sum = body:range(8, 8):int64()
  local text = tostring(sum) == "-9223372036854775808" and "not whole" or (tostring(sum) .. " ns")
  tree:append_text(string.format(": window %s, %s", tostring(body:range(0, 8):int64()), text))
  return true
end

local function dissect_membership(body, tree, pinfo)
  if body:len() ~= 8 then
    return bad_section(tree, pinfo, string.format("membership body of %d bytes, not 8", body:len()))
  end
  local members = body:range(0, 8):uint64()
  tree:add(F.members, body:range(0, 8))
  tree:add(F.members_nodes, body:range(0, 8), node_list(members)):set_generated()
  tree:append_text(": " .. node_list(members))
  return true
end

-- Types 9 and 11: ballot u32, instance u64.
local function dissect_ballot_instance(field)
  return function(body, tree, pinfo)
    if body:len() ~= 12 then
      return bad_section(tree, pinfo, string.format("body of %d bytes, not 12", body:len()))
    end
    local b = body:range(0, 4):uint()
    tree:add(F.ballot, body:range(0, 4)):append_text(" (" .. ballot_text(b) .. ")")
    tree:add(field, body:range(4, 8))
    tree:append_text(string.format(": ballot 0x%x, instance %s", b, tostring(body:range(4, 8):int64())))
    return true
  end
end

-- Type 10: ballot u32, last u8, 0 u8, count u16, highest u64, from u64, to u64, count x Vote.
local function dissect_phase1b(body, tree, pinfo)
  local n = body:len()
  if n < 32 then return bad_section(tree, pinfo, "phase 1b shorter than its 32-byte header") end
  local b = body:range(0, 4):uint()
  local count = body:range(6, 2):uint()
  tree:add(F.ballot, body:range(0, 4)):append_text(" (" .. ballot_text(b) .. ")")
  tree:add(F.p1b_last, body:range(4, 1))
  tree:add(F.p1b_reserved, body:range(5, 1))
  tree:add(F.p1b_count, body:range(6, 2))
  tree:add(F.p1b_highest, body:range(8, 8))
  tree:add(F.p1b_from, body:range(16, 8))
  tree:add(F.p1b_to, body:range(24, 8))
  if n ~= 32 + 28 * count then
    return bad_section(tree, pinfo, string.format("%d votes need %d bytes, the body has %d", count,
      32 + 28 * count, n))
  end
  for i = 0, count - 1 do add_vote(tree, body, 32 + 28 * i, "Vote") end
  return true
end

-- Type 12: low u64, ballot u32.
local function dissect_state(body, tree, pinfo)
  if body:len() ~= 12 then
    return bad_section(tree, pinfo, string.format("state body of %d bytes, not 12", body:len()))
  end
  local b = body:range(8, 4):uint()
  tree:add(F.low, body:range(0, 8))
  tree:add(F.ballot, body:range(8, 4)):append_text(" (" .. ballot_text(b) .. ")")
  tree:append_text(string.format(": low %s, ballot seen 0x%x", tostring(body:range(0, 8):int64()), b))
  return true
end

local SECTION_DISSECTORS = {
  [1] = function(body, tree, pinfo, ctx) return dissect_batch(body, tree, pinfo, ctx, ctx.sender) end,
  [2] = dissect_vote_list("Vote"),
  [3] = dissect_vote_list("Proposal"),
  [4] = dissect_requests,
  [5] = dissect_retransmit_data,
  [6] = dissect_ic_round,
  [7] = dissect_wake,
  [14] = dissect_rate_window,
  [8] = dissect_membership,
  [9] = dissect_ballot_instance(F.low),
  [10] = dissect_phase1b,
  [11] = dissect_ballot_instance(F.activation),
  [12] = dissect_state,
  [13] = dissect_vote_list("Decision"),
}

-- --- the frame ----------------------------------------------------------------------------------

-- Marks the frame refused with the decoder's reason (lib/core/wire.cc, to_string(DecodeError)).
local function refuse(tree, item, pinfo, reason)
  tree:add(F.error, reason):set_generated()
  item:add_proto_expert_info(E.malformed, "Malformed: " .. reason)
  pinfo.cols.info:set("TOB malformed: " .. reason)
end

function tob.dissector(tvb, pinfo, root)
  local len = tvb:len()
  pinfo.cols.protocol = "TOB"
  local tree = root:add(tob, tvb:range(0, len))
  bad_section_text = nil

  -- The decoder's checks in its order: length, magic, version, kind, section bytes, CRC,
  -- sender, segment, stage, suspect, section walk, section count.
  if len < HEADER_BYTES + TRAILER_BYTES then
    if len > 0 then tree:add(F.sec_body, tvb:range(0, len)):set_text("Bytes: " .. len) end
    refuse(tree, tree, pinfo, string.format("too short (%d bytes, a frame has at least 40)", len))
    return len
  end
  local magic = tvb:range(0, 2):uint()
  local version = tvb:range(2, 1):uint()
  local kind = tvb:range(3, 1):uint()
  local sender = tvb:range(6, 1):uint()
  local flags = tvb:range(7, 1):uint()
  local cycle = tvb:range(8, 8):uint64()
  local seg_index = tvb:range(16, 2):uint()
  local seg_count = tvb:range(18, 2):uint()
  local view = tvb:range(20, 8):uint64()
  local stage = tvb:range(28, 1):uint()
  local suspected = tvb:range(29, 1):uint()
  local section_count = tvb:range(30, 2):uint()
  local section_bytes = tvb:range(32, 4):uint()

  tree:add(F.magic, tvb:range(0, 2))
  tree:add(F.version, tvb:range(2, 1))
  tree:add(F.kind, tvb:range(3, 1))
  tree:add(F.cluster, tvb:range(4, 2))
  tree:add(F.sender, tvb:range(6, 1))
  local ft = tree:add(F.flags, tvb:range(7, 1))
  ft:add(F.second_copy, tvb:range(7, 1))
  ft:add(F.aux, tvb:range(7, 1))
  ft:add(F.authenticated, tvb:range(7, 1))
  tree:add(F.cycle, tvb:range(8, 8))
  tree:add(F.seg_index, tvb:range(16, 2))
  tree:add(F.seg_count, tvb:range(18, 2))
  local vt = tree:add(F.view, tvb:range(20, 8))
  vt:add(F.view_nodes, tvb:range(20, 8), node_list(view)):set_generated()
  tree:add(F.stage, tvb:range(28, 1))
  tree:add(F.suspected, tvb:range(29, 1))
  tree:add(F.section_count, tvb:range(30, 2))
  local sbt = tree:add(F.section_bytes, tvb:range(32, 4))

  if magic ~= MAGIC then refuse(tree, tree, pinfo, "bad magic"); return len end
  if version ~= 1 and version ~= 2 then refuse(tree, tree, pinfo, "unsupported version"); return len end
  if kind ~= 1 and kind ~= 2 then refuse(tree, tree, pinfo, "unknown frame kind"); return len end
  if section_bytes > len - HEADER_BYTES - TRAILER_BYTES then
    refuse(tree, sbt, pinfo, string.format("section bytes beyond the frame (%d, the frame has room for %d)",
      section_bytes, len - HEADER_BYTES - TRAILER_BYTES))
    return len
  end
  local body_end = HEADER_BYTES + section_bytes
  local frame_bytes = body_end + TRAILER_BYTES

  -- CRC32C over every byte before the trailer.
  local crc = tvb:range(body_end, 4):uint()
  local computed = crc32c(tvb:range(0, body_end):bytes(), body_end)
  local ct = tree:add(F.crc, tvb:range(body_end, 4))
  ct:add(F.crc_computed, tvb:range(body_end, 4), computed):set_generated()
  local crc_ok = (crc == computed)
  ct:add(F.crc_status, tvb:range(body_end, 4), crc_ok and 1 or 0):set_generated()
  if crc_ok then
    ct:append_text(" [valid]")
  else
    ct:append_text(string.format(" [invalid, computed 0x%08x]", computed))
    ct:add_proto_expert_info(E.bad_crc, string.format("Bad CRC32C: 0x%08x on the wire, 0x%08x computed", crc, computed))
  end
  -- The authentication trailer (lib/dataplane/security/auth_trailer.h), then Ethernet padding.
  local after = frame_bytes
  local authenticated = band(flags, 4) ~= 0
  if authenticated then
    local at = tree:add(F.auth, tvb:range(frame_bytes, math.min(AUTH_TRAILER_BYTES, len - frame_bytes)))
    if len - frame_bytes < AUTH_TRAILER_BYTES then
      at:add_proto_expert_info(E.auth_bad, string.format("%d bytes after the CRC, the trailer is %d",
        len - frame_bytes, AUTH_TRAILER_BYTES))
      after = len
    else
      local copy = tvb:range(frame_bytes, 1):uint()
      local reserved = tvb:range(frame_bytes + 1, 1):uint()
      at:add(F.auth_copy, tvb:range(frame_bytes, 1))
      at:add(F.auth_reserved, tvb:range(frame_bytes + 1, 1))
      at:add(F.auth_key_id, tvb:range(frame_bytes + 2, 2))
      at:add(F.auth_tag, tvb:range(frame_bytes + 4, 16))
      if copy > 7 or reserved ~= 0 then
        at:add_proto_expert_info(E.auth_bad, "copy above 7 or reserved byte not 0")
      end
      at:append_text(string.format(", key 0x%04x, copy %d", tvb:range(frame_bytes + 2, 2):uint(), copy))
      after = frame_bytes + AUTH_TRAILER_BYTES
    end
  end
  if len > after then tree:add(F.padding, tvb:range(after, len - after)) end

  local refused = nil
  if not crc_ok then refused = "CRC mismatch"
  elseif sender >= MAX_NODES then refused = "sender id out of range"
  elseif seg_count == 0 or seg_index >= seg_count then refused = "segment index not below segment count"
  elseif stage > 2 then refused = "unknown stage"
  elseif suspected ~= NO_NODE and suspected >= MAX_NODES then refused = "suspected node out of range"
  end

  -- Sections: shown even when the frame is refused (a bad CRC still shows what arrived), each
  -- header and body only when it lies inside the section area.
  local ctx = { version = version, sender = sender, messages = 0 }
  local off = HEADER_BYTES
  local found = 0
  local names = {}
  while off < body_end do
    if body_end - off < SECTION_HEADER_BYTES then
      local st = tree:add(F.section, tvb:range(off, body_end - off))
      st:set_text(string.format("Section header cut: %d bytes left in the section area", body_end - off))
      refused = refused or "section overruns the section area"
      break
    end
    local stype = tvb:range(off, 1):uint()
    local slen = tvb:range(off + 2, 2):uint()
    local name = SECTION[stype] or string.format("unknown type %d", stype)
    if body_end - off - SECTION_HEADER_BYTES < slen then
      local st = tree:add(F.section, tvb:range(off, body_end - off))
      st:set_text(string.format("Section %d: %s, length %d overruns the section area (%d bytes left)",
        found + 1, name, slen, body_end - off - SECTION_HEADER_BYTES))
      st:add(F.sec_type, tvb:range(off, 1))
      st:add(F.sec_flags, tvb:range(off + 1, 1))
      st:add(F.sec_length, tvb:range(off + 2, 2))
      refused = refused or "section overruns the section area"
      break
    end
    found = found + 1
    local st = tree:add(F.section, tvb:range(off, SECTION_HEADER_BYTES + slen))
    st:set_text(string.format("Section %d: %s (%d bytes)", found, name, slen))
    st:add(F.sec_type, tvb:range(off, 1))
    st:add(F.sec_flags, tvb:range(off + 1, 1))
    st:add(F.sec_length, tvb:range(off + 2, 2))
    local handler = SECTION_DISSECTORS[stype]
    if slen > 0 then
      local body = tvb:range(off + SECTION_HEADER_BYTES, slen)
      if handler then
        handler(body, st, pinfo, ctx)
      else
        st:add(F.sec_body, body)
        if stype ~= 7 then st:add_proto_expert_info(E.unknown_section) end
      end
    elseif handler then
      handler(tvb:range(off, 0), st, pinfo, ctx)
    end
    -- Repeated sections in a row (IC chunks, one per section) as one name with a count.
    local short = (stype == 1) and "batch" or name
    if #names > 0 and names[#names].name == short then
      names[#names].count = names[#names].count + 1
    else
      names[#names + 1] = { name = short, count = 1 }
    end
    off = off + SECTION_HEADER_BYTES + slen
  end
  if not refused and found ~= section_count then
    refused = string.format("section count mismatch (header %d, found %d)", section_count, found)
  end

  local info = string.format("%s node %d cycle %s", kind == 2 and "IC" or "Slot", sender, tostring(cycle))
  if seg_count > 1 then info = info .. string.format(" seg %d/%d", seg_index, seg_count) end
  if kind == 1 then info = info .. string.format(" %s view {%s}", STAGE[stage] or tostring(stage), node_list(view)) end
  if band(flags, 1) ~= 0 then info = info .. " (2nd copy)" end
  if band(flags, 2) ~= 0 then info = info .. " (aux)" end
  if authenticated then info = info .. " [auth]" end
  if ctx.messages > 0 then info = info .. string.format(", %d msgs", ctx.messages) end
  if #names > 0 then
    local parts = {}
    for i, n in ipairs(names) do parts[i] = (n.count > 1) and string.format("%s x%d", n.name, n.count) or n.name end
    info = info .. ": " .. table.concat(parts, ", ")
  end
  tree:append_text(string.format(", node %d, cycle %s", sender, tostring(cycle)))

  if refused then
    refuse(tree, tree, pinfo, refused)
  else
    pinfo.cols.info:set(info)
    if bad_section_text then
      -- The frame decodes but a section's codec would refuse it (lib/core/batch.cc,
      -- otfp_wire.cc, ic_wire.cc): the receiver counts the frame malformed.
      tree:add(F.error, "section: " .. bad_section_text):set_generated()
      pinfo.cols.info:append(" [malformed section]")
    end
  end
  return len
end

DissectorTable.get("ethertype"):add(ETHERTYPE, tob)
