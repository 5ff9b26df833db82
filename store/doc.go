// Package store is where mcpkeep replicas share what they must
// (docs/design.md §26): membership (each replica's forwarding address,
// registered with a TTL that it refreshes while it lives) and a
// key-value with TTLs and bounded values (finished tasks' results, so
// any replica answers a poll and a result outlives its owner).
//
// Two implementations: Memory, the embedded default (one process: the
// membership is itself, values live in memory), and Redis, through
// github.com/redis/go-redis/v9 (Open "redis://HOST:PORT/DB", or
// "rediss://" for TLS). Everything read from Redis is treated as
// hostile: values are read bounded, addresses and ids are validated,
// the number of members listed is capped, and whatever fails a check is
// skipped or refused with an error value, never trusted.
package store
