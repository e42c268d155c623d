// Package target is a Go v1model target for P4_16: it parses, type-checks
// and compiles a P4 program written for v1model (the subset that
// p4/swordbox.p4 and the p4lang tutorial programs use) and executes it on
// Ethernet frames, with the runtime state a P4Runtime server exposes.
//
// It owns: the front end (lexer, parser, type checker), the compilation of
// parsers, controls, actions and tables to closures over a flat array of
// 64-bit slots (no tree walk and no allocation per packet), the v1model
// pipeline (parser, verifyChecksum, ingress, egress, computeChecksum,
// deparser), the P4Info of a program (p4c's naming and ID rules), and the
// semantics of P4Runtime's TableEntry, RegisterEntry, CounterEntry,
// DirectCounterEntry, MeterEntry, DirectMeterEntry, ActionProfileMember,
// ActionProfileGroup and PacketReplicationEngineEntry messages on a Device,
// and the digest records a server turns into DigestLists. It does not own the P4Runtime
// gRPC service (arbitration, streams, pipeline config): that is a server
// built on top of this package.
//
// Decisions where P4, v1model or BMv2 leave room, or where this target is
// narrower:
//
//   - Widths: bit<W> with 1 <= W <= 64, bool, enums (plain and bit<W>
//     serializable), error. int<W>, varbit, header stacks and unions, tuples
//     and nested sub-parsers/controls are refused with file:line:col.
//   - Operator precedence follows p4c's grammar (==, != and the relational
//     operators bind more loosely than &, ^, |).
//   - An int literal takes the width of the other operand; a constant that
//     does not fit is refused (an explicit cast truncates, as in p4c).
//   - Uninitialised variables and metadata read as zero (all slots are
//     cleared per packet, as BMv2 does for metadata).
//   - Division and modulo by zero yield 0.
//   - A parser error does not drop the packet (BMv2 simple_switch): ingress
//     runs with standard_metadata.parser_error set; the unparsed bytes are
//     the payload. A parser runs at most 1024 states (then ParserTimeout).
//   - Registers: reading an index out of range yields 0; writing one is
//     ignored. Counters ignore indexes out of range. Counter bytes are the
//     length of the frame as received.
//   - hash(result, algo, base, data, max) = base + (h mod max), truncated
//     to result's width; max == 0 means no modulo. The data fields are
//     concatenated MSB first into bytes; a trailing partial byte is padded
//     with zero bits. crc32 is IEEE 802.3 (zlib's), crc16 is CRC-16/ARC
//     (reflected polynomial 0x8005, initial value 0, check value 0xBB3D),
//     identity is the data as a big-endian integer (its last 8 bytes),
//     csum16 the Internet checksum. crc32_custom, crc16_custom, random and
//     xor16 are refused.
//   - Direct counters count every hit of an entry of their table (packets
//     and bytes); misses (the default action) are not counted.
//   - A table without default_action gets NoAction; if NoAction is not in
//     its actions, it is added as @defaultonly.
//   - Packets are processed one at a time under one mutex per Device, so
//     that register read-modify-write sequences of one packet are atomic
//     with respect to other packets (a total order, as a switch pipeline
//     gives). Control-plane operations take the same mutex.
//   - The packet replication engine (pre.go): multicast groups and clone
//     sessions as P4Runtime's PacketReplicationEngineEntry; mcast_grp,
//     clone and clone_preserving_field_list (@field_list on members of the
//     user metadata struct) with BMv2 simple_switch's semantics: an I2E
//     clone is the packet as received, parsed again, metadata zeroed but
//     the field list; multicast replicas carry ingress's headers and
//     metadata; an E2E clone carries egress's headers and runs egress
//     again. Only the usual one-copy path is inlined: replication takes a
//     slower path that still does not allocate in steady state.
//   - Range and optional match kinds: a table with a ternary, range or
//     optional key is a priority-ordered scan (a range key checks
//     low <= key <= high). In const entries, a range key takes a value or
//     _ (lo .. hi keysets are not parsed). P4Runtime: a range covering the
//     whole field, or low > high, is INVALID_ARGUMENT (a don't-care is an
//     omitted field, as for ternary).
//   - resubmit_preserving_field_list and recirculate_preserving_field_list
//     as in BMv2: at the end of ingress a resubmitted packet (as received)
//     enters ingress again instead of going on, instance_type 6; at the end
//     of egress a recirculated packet (as deparsed) enters ingress again
//     instead of leaving, instance_type 4; metadata zeroed but the field
//     list and ingress_port. A packet re-enters at most maxReentry (8)
//     times in a row, then it is dropped (Stats.ReentryLimit). The old
//     resubmit(data) and recirculate(data) are refused.
//   - Meters and direct meters (meter.go): two-rate three-colour markers
//     (RFC 2698) on the Device's clock, colours GREEN 0, YELLOW 1, RED 2,
//     GREEN until configured; configured by P4Runtime's MeterEntry,
//     DirectMeterEntry and TableEntry.meter_config. A direct meter runs
//     when its table hits; read gives GREEN on a miss.
//   - Digests (digest.go): digest<T>(receiver, data) with T a struct of
//     bit<W> or bool fields (a struct value, or a list with T explicit);
//     one P4Info digest per T, named after it, its struct in type_info, as
//     p4c does. Records queue on the Device (1024 per digest, then dropped
//     and counted) until a server takes them (TakeDigests).
//   - Action profiles and selectors (profile.go): implementation =
//     action_profile or action_selector; selector keys feed the selector's
//     hash and are not match fields; members, groups and one-shot action
//     sets from P4Runtime. A profile serves one table.
//   - Idle timeouts (idle.go): support_timeout = true; every hit records
//     the clock; ExpiredEntries reports and restarts the expired ones.
//   - clone3, random, truncate, lookahead/advance and value sets are
//     refused. log_msg is
//     accepted and does nothing. The timestamps are read-only and read the
//     clock lazily (Options.Now, microseconds).
//   - Deparsing: a header of the headers struct that was extracted is
//     emitted from its original bytes. The parser decodes only the fields
//     the program mentions; every store into a header (assignment, out
//     argument, register read, hash, checksum update) marks it modified,
//     and the deparser then patches the mentioned fields into the copy
//     (or encodes the header from its fields when all are mentioned).
//     Headers made valid by setValid are encoded from their fields.
//   - P4Info: names, aliases and IDs as p4c makes them (IDs: the entity
//     type's prefix in the top byte, the Jenkins one-at-a-time hash of the
//     fully qualified name in the low 24 bits, @id overrides; controller
//     headers hash the header type's name), tables without size get 1024,
//     entities in declaration order.
//   - Limits against hostile input: widths up to 64 bits, 1M cells per
//     register or counter and 4M in total, tables up to 16M entries,
//     #define bodies up to 4096 tokens, programs up to 1M tokens, hash and
//     checksum data up to 120 bytes, 1024 parser states per packet.
//   - P4Runtime: const tables and const default actions refuse writes with
//     PERMISSION_DENIED, and is_const set in a write is INVALID_ARGUMENT;
//     negative register and counter indexes are INVALID_ARGUMENT, indexes
//     past the end OUT_OF_RANGE, and so are empty byte strings and values
//     wider than the field's bitwidth; a direct counter of an entry that
//     does not exist is NOT_FOUND (read and write);
//     malformed matches (zero ternary mask, lpm prefix 0, bits outside the
//     mask or prefix, missing exact fields, wrong priority) and actions
//     (not in the table, wrong scope, missing parameters) are
//     INVALID_ARGUMENT; a full table is RESOURCE_EXHAUSTED. Byte strings
//     are accepted padded or canonical and read back canonical (shortest,
//     at least one byte). Metadata missing from a PacketOut is zero.
package target
