// Package ycsb generates the YCSB core workloads (A, B, C, D, F and
// write-only) with YCSB's own key generators, and reads traces written by the
// real YCSB tool's `basic` binding, so that every system in the rack (Clover,
// Sherman, SWARM-KV) is driven by the same operation streams.
//
// It owns operation streams only: which operation comes next, on which key,
// with which value bytes. It does not run operations, time them or report on
// them (the benchmark harness in testbed does that), and it imports nothing of
// swordbox's.
//
// # Generators (as YCSB 0.17 core does them)
//
//   - Zipfian is YCSB's ZipfianGenerator: Gray et al.'s "Quickly generating
//     billion-record synthetic databases" method, with zeta(n, theta) summed
//     exactly as YCSB sums it, the same u*zeta(n) < 1 and
//     < 1 + 0.5^theta cut-offs for the two most popular items, and YCSB's
//     incremental zeta recomputation when the item count grows (including its
//     quirk of recomputing eta from the original item count).
//   - ScrambledZipfian is YCSB's ScrambledZipfianGenerator: a zipfian draw over
//     ITEM_COUNT = 10^10 (+1, max inclusive) items with the precomputed
//     zeta = 26.46902820178302 when the constant is 0.99, hashed with YCSB's
//     fnvhash64 (FNV-1a over the 8 little-end octets, then Math.abs) and
//     reduced modulo the record count. Hot keys are therefore scattered over
//     the key space and their probabilities are sums over many zipfian ranks,
//     exactly as in YCSB.
//   - Uniform is UniformLongGenerator over the loaded records.
//   - Latest is SkewedLatestGenerator: max - zipfian.nextLong(max) where max is
//     the newest acknowledged key, with YCSB's quirk that the zipfian is built
//     over max items (so key 0 is never chosen).
//   - The operation chooser is DiscreteGenerator (a uniform double walked over
//     the normalised proportions in declaration order).
//
// Decisions where YCSB is silent or unusable here:
//
//   - Constants other than 0.99: YCSB sums zeta over 10^10 terms (minutes).
//     We sum exactly up to 10^7 terms and use the Euler-Maclaurin expansion
//     beyond (absolute error far below 1e-9), which gives the same generator
//     for every practical purpose.
//   - Constants >= 1 (the SwordBox paper uses 1.5 in Figures 14 and 16): Gray's
//     method is undefined there (alpha = 1/(1-theta)), so YCSB cannot produce
//     them. We sample the exact law P(k) ∝ k^-theta with the
//     rejection-inversion method of Hörmann and Derflinger (1996) instead,
//     both for the plain and for the scrambled generator.
//   - Randomness: every client gets its own stream, seeded with PCG from
//     (Seed, client) and independent of every other client, so a run is
//     deterministic for a seed whatever the interleaving of clients. YCSB's
//     Java ThreadLocalRandom streams are not reproducible, so bit equality
//     with a Java run is not a goal; equality of the distributions is, and the
//     tests check it.
//   - Inserts with several clients (workload D): YCSB shares one insert
//     counter among threads, which would make streams depend on timing.
//     Instead client c of C inserts keys RecordCount + c, + c + C, + c + 2C,
//     ..., and sees the key sequence "loaded records, then its own inserts";
//     Latest and the zipfian chooser walk that per-client sequence, so a
//     client never reads a key that may not exist yet.
//   - One field per record: Op values are ValueSize bytes (YCSB's default
//     10 x 100-byte fields become one field of ValueSize bytes), because the
//     stores under test hold one value per key.
//   - Keys: KeyNum is YCSB's key number; Key is the number in YCSB's key name
//     "user<n>": fnvhash64(KeyNum) with insertorder=hashed (the default), or
//     KeyNum itself with ordered inserts. The stores use Key as their 8-byte
//     key, so a generated stream and a trace of the same run name the same
//     keys.
//   - Write-only is not a YCSB file: it is updateproportion=1 with the
//     zipfian chooser (the Clover and SwordBox papers' "100% writes").
//
// # Traces
//
// ParseTraceLine and TraceReader read the lines the basic binding prints
// (`READ usertable user123 [ field0 ]`, `UPDATE usertable user123 [ field0=...
// ]`, `INSERT ...`, `SCAN usertable user1 17 [ <all fields> ]`,
// `DELETE usertable user1`); every other line of YCSB's output (the property
// dump, status lines) is skipped. A TraceSource turns them into Ops.
package ycsb
