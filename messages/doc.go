// Package messages holds every typed message the jazz actors exchange, the
// NATS subject scheme they travel under, and the one codec that puts them on
// the wire.
//
// Messages are plain, copyable structs: no channels, funcs or shared
// pointers, so the same value can be sent to a local actor or published to a
// process on the other side of a NATS connection. Each carries a Place (run,
// agent, tool call) and a Trace carrier, so tracing and remote actors join
// without changing the shapes.
//
// The `--events` NDJSON stream is a rendering of the Event messages defined
// here; there is no second set of event types.
package messages
