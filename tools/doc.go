// Package tools names and registers the tools of supervised MCP servers.
//
// Every tool a server offers gets a public name "<server>__<tool>" made of
// [A-Za-z0-9_-], at most 64 characters (PublicNames). Where the plain name
// does not fit, a hash suffix of the original keeps it deterministic,
// unique within the server, stable across restarts and independent of list
// order. A host may supply its own Namer.
//
// Build turns a server's mcp.Tool list into definitions (Tool), checking
// Limits: by default at most 1000 tools per server and 256 KiB per
// marshalled schema. BuildTools, BuildResources and BuildTemplates leave
// out an item a host's go-sdk server would panic on (a tool whose input
// schema is not an object, a URI that does not parse, a template that is
// not RFC 6570) and report it as a Refusal; the rest of the list stands.
//
// A supervisor registers definitions in a Sink, which a host implements or
// takes ready-made as Set: it reserves its server name once, swaps the
// whole tool set atomically after each sync (a generation), and removes it
// when giving up. A swap that would take a public name registered by
// another server fails whole, leaving every registration as it was
// (docs/design.md §7 R20). A swap to an identical set changes nothing and emits no
// event, so the model-visible list does not flap when a server recovers
// with the same tools (docs/design.md §6).
package tools
