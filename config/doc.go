// Package config reads mcpkeep's config file (docs/design.md §11): the JSON that
// MCP hosts already use ("mcpServers", or VS Code's "servers"), plus
// mcpkeep's own reconnect, timeout and startup settings.
//
// Load reads a file and Parse parses its contents into a Config: the
// enabled servers, in file order, each a Server with every default applied
// and every bound checked. A server-level "reconnect" block overrides the
// top-level one field by field; durations are milliseconds. Every problem
// is reported at once, each an *Error naming its JSON path
// ("mcpServers.files.reconnect.maxDelayMs") and wrapping ErrInvalidConfig;
// keys that hosts define and mcpkeep ignores come back as Warnings.
//
// Server names follow tools.CheckServerName, the rule that keeps public
// tool names ("<server>__<tool>") unambiguous. Env and header values keep
// their ${VAR} references: the transports expand them at each spawn or
// connect, and they are secrets, never logged.
//
// A url server's "oauth" (true, or {"clientId", "clientSecretEnv",
// "scopes", "callbackPort"}) signs it in with package oauth
// (docs/design.md §22); Server.Target is what `mcpkeep auth` needs of it.
//
// Server.Opener builds a server's transport (transport.Stdio or
// transport.HTTP); mcpkeep.ServerOptions turns a Server into supervisor
// Options, and mcpkeep.Pool runs a whole Config.
package config
