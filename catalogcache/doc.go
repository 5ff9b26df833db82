// Package catalogcache keeps each server's catalog (tools, prompts,
// resources, templates and what it said at initialize) between runs, so a
// host is answered from the last run's lists while the servers connect,
// and remembers the servers that never came up (docs/design.md §20).
//
// A file is keyed by the server's name and a hash of what makes it that
// server (transport, command, args, cwd, url, env, headers, oauth): a
// changed command never reads the old command's catalog. Env and header
// values enter the hash only; no file holds them. Files are written
// atomically (a temporary file renamed over the old one) with mode 0600.
// A file that cannot be read, or that speaks of another server, is
// reported as an error matching ErrUnusable: callers log it as a warning
// and go on as if there were no cache.
package catalogcache
