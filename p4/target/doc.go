// Package target is a Go target for P4_16 programs written for v1model or
// for Tofino's TNA (tna.p4): it parses, type-checks and compiles a program
// (the subset that p4/swordbox.p4, p4/tna/swordbox.p4, the p4lang tutorial
// programs and the Tofino SDE's TNA examples use) and executes it on
// Ethernet frames, with the runtime state a P4Runtime server exposes.
//
// It owns: the front end (package frontend: preprocessor, lexer, parser,
// abstract syntax), the type checker and the compilation of parsers,
// controls, actions and tables to closures over a flat array of 64-bit
// slots (no tree walk and no allocation per packet),
// the v1model pipeline (parser, verifyChecksum, ingress, egress,
// computeChecksum, deparser) and the TNA pipeline (tna.go: ingress parser,
// ingress, ingress deparser, egress parser, egress, egress deparser), the
// P4Info of a program (p4c's naming and ID rules), and the
// semantics of P4Runtime's TableEntry, RegisterEntry, CounterEntry,
// DirectCounterEntry, MeterEntry, DirectMeterEntry, ActionProfileMember,
// ActionProfileGroup and PacketReplicationEngineEntry messages on a Device,
// and the digest records a server turns into DigestLists. It does not own the P4Runtime
// gRPC service (arbitration, streams, pipeline config): that is a server
// built on top of this package.
//
// The front end, for both architectures:
//
//   - The preprocessor (package frontend): #include <core.p4>, <v1model.p4> and
//     <tna.p4> are built in (one architecture per program; t2na.p4 and
//     the others are refused); #include "file" is looked up beside the
//     including file, then in CompileOptions.IncludeDirs in order (p4c's
//     -I), up to 32 deep; object-like #define (and CompileOptions.Defines,
//     p4c's -D), #undef, #if/#ifdef/#ifndef/#elif/#else/#endif with the C
//     preprocessor's integer expressions (undefined names are 0, as
//     __TARGET_TOFINO__ is: the TNA examples' "#if __TARGET_TOFINO__ == 2"
//     picks <tna.p4>), and #error. Function-like macros, #pragma and every
//     other directive are refused. Errors in an included file carry that
//     file's name, line and column.
//   - Instantiated sub-parsers and sub-controls (sub.go): a parser or
//     control declared at top level, instantiated in another one and
//     applied there, for both architectures. An instance is compiled once,
//     inline, bound to the argument locations of its first apply (applying
//     it again to other locations is refused); its locals are named
//     Outer.instance.local as p4c names them. A sub-parser's reject rejects
//     the parser that applied it; exit in a sub-control ends the pipeline
//     block.
//   - bit<W> with W > 64 is accepted for header and struct fields only:
//     such fields are parsed, copied with their header and deparsed, never
//     read or written on their own (refused by name).
//
// The TNA architecture (tna.go, tna_extern.go; tna.p4's declarations in
// package frontend), modelled on
// Tofino 1 as bf-p4c compiles for it:
//
//   - Package: Switch(pipe) main with one Pipeline(IngressParser,
//     Ingress, IngressDeparser, EgressParser, Egress, EgressDeparser); a
//     Switch of more pipes is refused. Block parameters are bound by
//     position to the pipeline's instances; trailing ones may be omitted
//     (tna.p4's @optional).
//   - Ports: the ingress port is Process's port (9 bits; a frame from a
//     port above 511 is dropped); the packet leaves on
//     ig_tm_md.ucast_egress_port. Options.CPUPort is the CPU port as for
//     v1model (PacketIn/PacketOut through @controller_header headers of
//     the ingress headers struct).
//   - What the parsers see: the ingress parser reads
//     ingress_intrinsic_metadata_t (8 bytes: resubmit_flag 0,
//     packet_version 0, ingress_port, ingress_mac_tstamp in nanoseconds),
//     then the port metadata (PORT_METADATA_SIZE, 64 bits, all zero: no
//     control plane sets it here), then the frame. As bf-p4c requires, the
//     ingress parser must extract ingress_intrinsic_metadata_t and consume
//     the port metadata (pkt.advance(PORT_METADATA_SIZE) or
//     port_metadata_unpack<T>(pkt)); a program that does not is refused.
//     The egress parser reads egress_intrinsic_metadata_t (27 bytes:
//     egress_port, pkt_length = the ingress deparser's output length, the
//     queue fields zero), then the ingress deparser's output (bridged
//     headers first, if the program emits them); an egress parser that
//     never extracts egress_intrinsic_metadata_t starts after it, as
//     bf-p4c arranges.
//   - Forwarding and drops: after ingress the packet is dropped if
//     ig_dprsr_md.drop_ctl bit 0 is set, or if ingress never wrote
//     ucast_egress_port (no destination: Tofino's traffic manager drops
//     it); bypass_egress = 1 sends the ingress deparser's output out
//     directly, otherwise egress runs and eg_dprsr_md.drop_ctl bit 0 drops.
//     A parser error (a select without match, reject, a short packet, a
//     failed verify) drops the packet unless the program reads
//     parser_err, which then holds tna's flags (PARSER_ERROR_NO_MATCH,
//     _PARTIAL_HDR or _TIMEOUT_USER) and the packet goes on with the
//     headers extracted so far. The unparsed bytes are the payload.
//     Writing mcast_grp_a, mcast_grp_b or copy_to_cpu is refused (no
//     multicast or copy-to-CPU in this model); so are Mirror,
//     Digest, Lpf, Wred, ParserCounter, ActionProfile/ActionSelector,
//     value sets and the other tna externs not listed below, and v1model's
//     externs and functions in a tna program.
//   - Resubmit() in the ingress deparser: when ingress leaves
//     ig_dprsr_md.resubmit_type non-zero nothing leaves; the frame as
//     received enters the ingress parser again, before any other packet,
//     with resubmit_flag 1 and, in place of the port metadata, the 64 bits
//     Resubmit.emit(hdr) gave (emit(): zero). A packet is resubmitted once
//     (Tofino 1): a resubmitted pass that asks again is dropped
//     (Stats.ReentryLimit); Stats.Resubmits counts them. Each pass counts
//     as a packet for Stats.RegisterReaccesses.
//   - Intrinsic timestamps (ingress_mac_tstamp, the global_tstamp fields)
//     are Options.Now's microseconds times 1000 (nanoseconds), read once
//     per packet; global_ver and the queue statistics are zero.
//   - Register<T, I>(size[, initial_value]): T is bit<W> or a struct of
//     bit<W> fields of at most 64 bits together, packed first field high
//     (two 32-bit halves: Register<pair, _>); cells start at
//     initial_value (else 0). RegisterAction<T, I, U>(reg) with its
//     apply(inout T value[, out U rv]) in the initializer block: execute(i)
//     loads the cell into value, zeroes rv, runs apply, stores value back
//     and returns rv, atomically with respect to other packets (the
//     Device's lock). An index past the end runs apply on a zero value and
//     drops the store. A second access to the same register for one packet
//     runs (bf-p4c would refuse the program: a register lives in one
//     stage) and is counted in Stats.RegisterReaccesses, for tests to
//     assert on. Register.read(i) and .write(i, v) for bit<W> cells.
//     RegisterParam<T>(v).read() is v (bf-rt sets it on Tofino; P4Runtime
//     does not address it). DirectRegister<T> attached with a table's
//     registers = property and DirectRegisterAction<T, U>: one cell per
//     entry, starting at the initial value; executed on a miss or from
//     another table's action, apply sees the initial value and the store
//     is dropped. execute_log, predicate and MathUnit are refused.
//   - Hash<W>(algo[, poly]).get(data): the data fields concatenated MSB
//     first (a header stands for its fields), the result's low W bits.
//     CRC8, CRC16, CRC32 and CRC64 are the Tofino SDE hash library's
//     crc_8 (0x07, check 0xF4), crc_16 (CRC-16/ARC), crc_32 (zlib's) and
//     crc_64 (0x42F0E1EBA9EA3693, not reflected); CUSTOM takes a
//     CRCPolynomial<bit<W>>(coeff, reversed, msb, extended, init, xor),
//     8 <= W <= 64, with the library's convention that init is loaded into
//     the register as given (reflected CRCs too); msb and extended are
//     refused, and so is RANDOM. IDENTITY is the data's low W bits.
//   - Random<W>.get(): xorshift64* per Device, seeded by
//     Options.RandomSeed (the same seed gives the same sequence).
//   - Checksum: add/subtract accumulate the 16-bit ones' complement sum
//     per packet, verify() is that sum == 0xFFFF, get() its complement,
//     update(data[, zeros_as_ones]) the Internet checksum of data;
//     subtract_all_and_deposit is refused.
//   - Counter<W, I>, DirectCounter<W> (counters = property), Meter<I>
//     (execute(index)) and DirectMeter (meters = property, execute())
//     share v1model's counter, direct_counter, meter and direct_meter
//     state and P4Runtime entities; meters return MeterColor_t (GREEN 0,
//     YELLOW 1, RED 3). Counter bytes are the frame's length as received
//     (in egress: the ingress deparser's output);
//     a DirectCounter counts every hit of its table (as v1model's), not
//     only the hits whose action calls count(); color-aware metering and
//     adjust_byte_count are refused.
//   - Placement (placement.go; opt-in: CompileOptions.TofinoPlacement
//     refuses, Program.TofinoPlacement reports): the stage constraints
//     bf-p4c enforces on stateful objects, checked on the compiled control
//     flow of ingress and egress (every path: if/else, a table's actions,
//     switch on action_run paired with each action, called actions and
//     sub-controls, if on t.apply().hit or .miss paired with the actions
//     that hit (any but @defaultonly) or miss (the default: the const one,
//     else any but @tableonly), return and exit; other conditions are not
//     evaluated, as
//     bf-p4c's TablesMutuallyExclusive decides mutual exclusion from the
//     structure alone). Refused, by name at file:line:col: a register
//     accessed twice on one path (its stateful ALU runs one RegisterAction
//     per packet; bf-p4c: "table tbl_act_10 and table tbl_act_9 are not
//     mutually exclusive, yet share Register ...", p4lang/p4c issue 2113,
//     for two executes in a row), a Counter counted or a Meter executed twice on one path
//     (bf-p4c's SharedIndirectAttachedAnalysis: "cannot share ... because
//     use of the ... is not mutually exclusive"), a table applied twice on
//     one path (bf-p4c's MultipleApply), and a cycle in the order of
//     stateful objects: a path that accesses A and later B requires A's
//     stage not after B's, and a packet passes the stages once, in order.
//     The order required is program order on a path: stricter than
//     bf-p4c, whose dependency graph (table_dependency_graph.h) orders
//     only data (a later stage), anti and output (the same stage or
//     later) and control dependences and may reorder independent
//     accesses; so a program that passes can be ordered, and one that is
//     refused for order might still be placed by bf-p4c once its
//     independent accesses are written in one order. Stage counts, memory
//     and PHV are not checked. Conservative: && and || and ?: count both
//     operands.
//     Stats.RegisterReaccesses still counts, at run time, a second access
//     that the executed path really made.
//   - P4Info: bf-p4c by default emits Tofino's externs as P4Info externs
//     of barefoot's own types, for BF Runtime; for P4Runtime (Stratum and
//     the SDE's P4Runtime server) it is run with
//     --p4runtime-force-std-externs, whose converter
//     (backends/tofino/bf-p4c/control-plane/p4runtime_force_std.cpp in
//     p4lang/p4c, read for this) turns Register, Counter, DirectCounter,
//     Meter, DirectMeter, Digest, ActionProfile/Selector and value sets
//     into the standard P4Info entities, strips the pipe's name from the
//     names ("pipe.SwitchIngress.t" becomes "SwitchIngress.t"), keeps the
//     low 24 bits of the IDs under the standard prefix, and drops
//     RegisterParam (and every RegisterAction, which was never an entity:
//     P4Runtime reads and writes the register). That is what this target
//     emits for a tna program: arch "tna", control-qualified names as
//     p4c's, registers with their cell type (a struct in type_info for a
//     struct cell; P4Runtime RegisterEntry data is then a struct of one
//     bitstring per field), no DirectRegister (the converter has no
//     standard form for it). IDs follow p4c's rule on those names; bf-p4c
//     hashes the pipe-qualified name, so its numbers differ: controllers
//     address everything by name. Stratum's Tofino tests use P4Info of
//     this form (arch "tna", standard entities).
//
// Decisions where P4, v1model or BMv2 leave room, or where this target is
// narrower:
//
//   - Widths: bit<W> with 1 <= W <= 64 (wider: header fields only, see
//     above), bool, enums (plain and bit<W> serializable), error. int<W>,
//     varbit, header stacks and unions and tuples are refused with
//     file:line:col.
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
//   - clone3, random, truncate, lookahead and value sets are refused;
//     advance(bits) skips whole bytes. log_msg is
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
