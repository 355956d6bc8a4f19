// Package telemetry owns jazz's OpenTelemetry export: it resolves the OTLP
// settings (config, then OTEL_* environment, then defaults), builds injected
// tracer and meter providers with OTLP/HTTP or OTLP/gRPC exporters, and
// offers the small instrumentation API the actors call: one trace per run
// with child spans for iterations, model requests, tool calls, gate decisions
// and subagents, plus W3C trace-context propagation through messages.Trace
// carriers and NATS headers.
//
// Telemetry is best-effort by construction: it never fails or slows a run.
// Bad settings give a warning and a run without export; a collector that is
// down, slow or rejecting gives one warning; Shutdown flushes within a fixed
// bound. Nothing here touches the OpenTelemetry globals.
//
// Content (prompts, completions, tool arguments and results) is not exported
// unless captureContent is on: every attribute passes through one filter that
// drops content keys. Every string that leaves the process for a collector
// passes one more gate, in the exporter, whoever set it: the run's secrets
// replaced, then cut to 256 characters (8 192 with capture on).
package telemetry
