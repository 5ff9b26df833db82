// Package catalogcache keeps each server's catalog (tools, prompts,
// resources, templates and what it said at initialize) between runs, so a
// host is answered from the last run's lists while the servers connect,
// and remembers the servers that never came up (docs/design.md §20).
//
// An entry is keyed by everything its catalog depends on: what makes the
// server that server (transport, command, args, cwd, url, headers, oauth),
// the environment its process gets (env values expanded, all of mcpkeep's
// with inheritEnv) and what its client declares (Declared: a server may
// list other tools to a host with other capabilities). The key is an
// HMAC-SHA256 under the directory's random salt, so neither a file's name
// nor its content says anything about a secret; no file holds env or
// header values. Files are written atomically (a temporary file renamed
// over the old one) with mode 0600. Same-named servers of two configs keep
// two entries; an entry nobody wrote for StaleAfter is removed by its
// server's next save. A file that cannot be read, or that speaks of
// another server, is reported as an error matching ErrUnusable: callers
// log it as a warning and go on as if there were no cache.
package catalogcache
